"""Budgets: a run suspends before a step that would pass it, and continues once it is raised."""

from __future__ import annotations

import asyncio

import pytest

from letitloop import Budget, BudgetExceeded, async_step, durable, durable_async, record_cost, step


def _costly(calls: list[int]):  # type: ignore[no-untyped-def]
    def call(i: int) -> int:
        calls.append(i)
        record_cost(usd=0.00002)  # 20 micro-dollars
        return i

    return call


def test_run_suspends_at_the_step_that_would_pass_the_budget(any_journal) -> None:
    calls: list[int] = []
    call = _costly(calls)

    @durable(journal=any_journal, run_id="b", budget=Budget(usd=0.00005))
    def flow() -> list[int]:
        return [step(f"s{i}", call, i, estimate=0.00002) for i in range(5)]

    with pytest.raises(BudgetExceeded) as err:
        flow()
    assert calls == [0, 1] and err.value.step == "s2"  # 40 spent + 20 estimated > 50
    assert "lil runs budget" in str(err.value)
    run = any_journal.get_run(any_journal.find_run("b")).run
    assert run.status == "suspended" and run.cost_micros == 40
    with pytest.raises(BudgetExceeded):
        flow()  # still over: suspends again without running anything
    assert calls == [0, 1]
    any_journal.set_budget(any_journal.find_run("b"), "tester", usd_micros=100)
    assert flow() == [0, 1, 2, 3, 4]
    assert calls == [0, 1, 2, 3, 4]
    detail = any_journal.get_run(any_journal.find_run("b"))
    assert detail.run.status == "completed"
    assert detail.run.cost_micros == sum(a.cost_micros for a in detail.attempts) == 100


def test_concurrent_async_steps_never_overshoot(any_journal) -> None:
    ran: list[int] = []

    async def call(i: int) -> int:
        ran.append(i)
        await asyncio.sleep(0.05)
        record_cost(usd=0.00001)
        return i

    @durable_async(journal=any_journal, run_id="fan", budget=Budget(usd=0.00005))
    async def fan() -> list[int]:
        return list(
            await asyncio.gather(
                *(async_step(f"q{i}", call, i, estimate=0.00001) for i in range(10))
            )
        )

    with pytest.raises(BudgetExceeded):
        asyncio.run(fan())
    detail = any_journal.get_run(any_journal.find_run("fan"))
    assert len(ran) == 5  # the other five were never started
    assert detail.run.cost_micros == sum(a.cost_micros for a in detail.attempts) <= 50
    assert detail.run.status == "suspended"
