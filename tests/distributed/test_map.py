"""step.map on the thread executor, on both local journals: order, child runs, replay, failures."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from letitloop import Retry, durable, durable_async, step
from letitloop.distributed import ThreadExecutor
from letitloop.errors import ConfigError, MapItemError


class Calls:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[int] = []

    def record(self, i: int) -> None:
        with self.lock:
            self.seen.append(i)


def test_results_come_back_in_item_order_and_replay_without_running(any_journal: Any) -> None:
    calls = Calls()

    def square(i: int) -> int:
        calls.record(i)
        return i * i

    @durable(journal=any_journal, name="fan")
    def fan(n: int) -> int:
        squares = step.map("square", square, range(n), on=ThreadExecutor(4))
        return step("total", sum, squares)

    assert fan(20) == sum(i * i for i in range(20))
    assert sorted(calls.seen) == list(range(20))
    assert fan(20) == sum(i * i for i in range(20))  # the run completed: nothing runs again
    assert len(calls.seen) == 20

    runs = {r.run_id: r for r in any_journal.list_runs(limit=100)}
    children = [r for r in runs.values() if r.workflow == "fan.square"]
    assert len(children) == 20 and {r.status for r in children} == {"completed"}
    parent = any_journal.get_run("fan:" + next(r.key for r in runs.values() if r.workflow == "fan"))
    kinds = [a.kind for a in parent.attempts]
    assert kinds[:2] == ["map", "step"], kinds


def test_a_failed_item_fails_the_map_and_only_it_runs_again(any_journal: Any) -> None:
    calls = Calls()
    broken = {7}

    def work(i: int) -> int:
        calls.record(i)
        if i in broken:
            raise ValueError(f"item {i} is broken")
        return i + 100

    @durable(journal=any_journal, name="flaky_fan")
    def flaky(n: int) -> list[int]:
        return step.map("work", work, list(range(n)), max_in_flight=3)

    with pytest.raises(MapItemError) as err:
        flaky(10)
    assert "item 7" in str(err.value) and "ValueError" in str(err.value)
    assert err.value.fix and "replay" in err.value.fix
    first = len(calls.seen)
    assert 7 in calls.seen

    broken.clear()
    assert flaky(10) == [i + 100 for i in range(10)]
    again = calls.seen[first:]
    assert 7 in again
    # items that finished before the failure are taken from the journal, not run again
    finished_first = set(calls.seen[:first]) - {7}
    assert not finished_first & set(again), (finished_first, again)


def test_policies_apply_to_each_item(any_journal: Any) -> None:
    tries: dict[int, int] = {}
    lock = threading.Lock()

    def shaky(i: int) -> int:
        with lock:
            tries[i] = tries.get(i, 0) + 1
            n = tries[i]
        if i % 2 == 0 and n == 1:
            raise ConnectionError("transient")
        return i

    @durable(journal=any_journal, name="retry_fan")
    def fan() -> list[int]:
        return step.map("shaky", shaky, range(6), retry=Retry(attempts=3, backoff=0.01))

    assert fan() == list(range(6))
    assert tries == {0: 2, 1: 1, 2: 2, 3: 1, 4: 2, 5: 1}


def test_nested_steps_inside_an_item_are_journaled_in_its_child_run(any_journal: Any) -> None:
    def item(i: int) -> str:
        a = step("fetch", lambda: f"doc{i}")
        return step("summarize", str.upper, a)

    @durable(journal=any_journal, name="nested_fan")
    def fan() -> list[str]:
        return step.map("summarize_docs", item, [1, 2, 3])

    assert fan() == ["DOC1", "DOC2", "DOC3"]
    child = next(
        r for r in any_journal.list_runs(limit=50) if r.workflow == "nested_fan.summarize_docs"
    )
    names = [a.name for a in any_journal.get_run(child.run_id).attempts]
    assert names == ["summarize_docs", "fetch", "summarize"], names


def test_async_twin_takes_its_position_at_call(any_journal: Any) -> None:
    from letitloop import async_step

    @durable_async(journal=any_journal, name="async_fan")
    async def fan() -> tuple[list[int], int]:
        mapped, other = await asyncio.gather(
            async_step.map("double", lambda i: 2 * i, [1, 2, 3]),
            async_step("other", lambda: 42),
        )
        return mapped, other

    assert asyncio.run(fan()) == ([2, 4, 6], 42)
    assert asyncio.run(fan()) == ([2, 4, 6], 42)


def test_bad_options_fail_before_anything_is_journaled(any_journal: Any) -> None:
    @durable(journal=any_journal, name="bad_fan")
    def fan(opt: dict[str, Any]) -> list[int]:
        return step.map("x", abs, [1], **opt)

    for opt, needle in (
        ({"max_in_flight": 0}, "max_in_flight"),
        ({"max_in_flight": True}, "max_in_flight"),
        ({"retries": 3}, "unknown keywords"),
    ):
        with pytest.raises(ConfigError, match=needle):
            fan(opt)
    assert not [r for r in any_journal.list_runs(limit=50) if r.workflow == "bad_fan.x"]


def test_other_processes_need_a_journal_they_can_open() -> None:
    from letitloop import MemoryJournal

    class Remote(ThreadExecutor):
        in_process = False

    @durable(journal=MemoryJournal(), name="remote_fan")
    def fan() -> list[int]:
        return step.map("x", abs, [1], on=Remote())

    with pytest.raises(ConfigError, match="journal they can open") as err:
        fan()
    assert err.value.fix and "postgresql://" in err.value.fix


def test_map_items_lists_each_items_child_run_in_order(any_journal: Any) -> None:
    from letitloop.journal._maps import map_items

    def maybe(i: int) -> int:
        if i == 2:
            raise KeyError(i)
        return i

    @durable(journal=any_journal, name="listed")
    def fan(n: int) -> list[int]:
        step("before", lambda: 0)
        return step.map("maybe", maybe, range(n), max_in_flight=1)

    with pytest.raises(MapItemError):
        fan(5)
    run = next(r for r in any_journal.list_runs(limit=50) if r.workflow == "listed")
    (items,) = map_items(any_journal, any_journal.get_run(run.run_id))
    assert (items.position, items.name, items.workflow) == (1, "maybe", "listed.maybe")
    assert [i for i, _ in items.items] == [0, 1, 2]  # one in flight: nothing after the failure
    assert items.counts() == {"completed": 2, "failed": 1}
    assert items.summary() == "2 completed, 1 failed of 3 items"


def test_a_progress_view_sees_done_running_failed_and_replayed(any_journal: Any) -> None:
    from letitloop.kernel._fanout import MapUpdate, map_observer_var

    seen: list[MapUpdate] = []
    fail = {4}

    def work(i: int) -> int:
        if i in fail:
            raise RuntimeError("no")
        return i

    @durable(journal=any_journal, name="watched")
    def fan() -> list[int]:
        return step.map("work", work, range(6), max_in_flight=2)

    token = map_observer_var.set(seen.append)
    try:
        with pytest.raises(MapItemError):
            fan()
        last = seen[-1]
        assert (last.name, last.total, last.failed, last.replayed) == ("work", 6, 1, 0)
        assert last.done >= 4 and last.running == 0
        fail.clear()
        seen.clear()
        assert fan() == list(range(6))
    finally:
        map_observer_var.reset(token)
    assert seen[0].replayed == seen[0].done >= 4  # the first view already counts the journal
    assert (seen[-1].done, seen[-1].failed, seen[-1].dashboard) == (6, 0, None)


def test_a_budget_stop_suspends_the_map_and_a_raised_budget_continues_it(any_journal: Any) -> None:
    from letitloop import Budget, BudgetExceeded, record_cost

    calls = Calls()

    def priced(i: int) -> int:
        calls.record(i)
        record_cost(0.01)
        return i

    @durable(journal=any_journal, name="budgeted", budget=Budget(usd=0.035))
    def fan() -> list[int]:
        return step.map("priced", priced, range(6), max_in_flight=1, estimate=0.01)

    with pytest.raises(BudgetExceeded) as err:
        fan()
    assert "priced[3]" in str(err.value)  # the first item whose estimate would pass the budget
    assert sorted(calls.seen) == [0, 1, 2]
    run = next(r for r in any_journal.list_runs(limit=50) if r.workflow == "budgeted")
    assert run.status == "suspended"

    any_journal.set_budget(run.run_id, "tester", usd_micros=1_000_000)
    assert fan() == list(range(6))
    assert sorted(calls.seen) == list(range(6))  # items 0-2 replayed, 3-5 ran once
    total = next(r for r in any_journal.list_runs(limit=50) if r.workflow == "budgeted")
    assert total.status == "completed"
    assert total.cost_micros == 60_000  # the map step's cost is its items' sum
