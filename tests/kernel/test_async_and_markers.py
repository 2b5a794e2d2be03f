"""Async steps under gather, markers with reconcile/resolve, leases between sessions."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from letitloop import async_step, atomic_marker, current_step, durable, durable_async, step
from letitloop.errors import InDoubtError, JournalError, RunLockedError


class Boom(Exception):
    pass


def test_gathered_async_steps_run_concurrently_with_stable_positions(any_journal) -> None:
    state = {"fail": True}
    ran = []

    async def slow(i: int) -> int:
        ran.append(i)
        await asyncio.sleep(0.1)
        return i * i

    @durable_async(journal=any_journal, run_id="gather")
    async def flow() -> list[int]:
        out = await asyncio.gather(*[async_step(f"s{i}", slow, i) for i in range(10)])
        if state["fail"]:
            raise Boom()
        return list(out)

    asyncio.run(_warm(any_journal))
    t0 = time.perf_counter()
    with pytest.raises(Boom):
        asyncio.run(flow())
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.5, f"10 concurrent 100 ms steps took {elapsed:.3f} s"
    first = [(a.position, a.name) for a in any_journal.get_run(_rid(any_journal)).attempts]
    assert first == [(i, f"s{i}") for i in range(10)]
    state["fail"] = False
    assert asyncio.run(flow()) == [i * i for i in range(10)]
    assert sorted(ran) == list(range(10))  # replayed, not re-run
    again = [(a.position, a.name) for a in any_journal.get_run(_rid(any_journal)).attempts]
    assert again == first


async def _warm(journal) -> None:  # type: ignore[no-untyped-def]
    """Start the owner before timing (its start-up is not what this test measures)."""
    journal.list_runs()


def _rid(journal) -> str:  # type: ignore[no-untyped-def]
    return journal.list_runs()[0].run_id


def test_async_sync_functions_and_child_runs(any_journal) -> None:
    @durable_async(journal=any_journal)
    async def child(x: int) -> int:
        return await async_step("plus", lambda v: v + 1, x)

    @durable_async(journal=any_journal, run_id="aparent")
    async def parent() -> list[int]:
        return [await child(1), await child(2)]

    assert asyncio.run(parent()) == [2, 3]
    assert len([r for r in any_journal.list_runs() if r.parent]) == 2


def _marker_flow(journal, effects, reconcile=None, crash=True):  # type: ignore[no-untyped-def]
    state = {"crash": crash}

    @durable(journal=journal, run_id="m", name="marker_flow")
    def flow() -> str:
        step("before", lambda: "x")
        with atomic_marker("notify", reconcile=reconcile) as go:
            if go:
                effects.append(current_step().idempotency_key)
                if state["crash"]:
                    state["crash"] = False
                    raise Boom("died after the side effect")
        return step("after", lambda: "done")

    return flow


def test_marker_that_raised_is_in_doubt_until_resolved(any_journal) -> None:
    effects: list[str] = []
    flow = _marker_flow(any_journal, effects)
    with pytest.raises(Boom):
        flow()
    with pytest.raises(InDoubtError) as err:
        flow()
    e = err.value
    assert e.step == "notify" and e.position == 1 and e.run_id == "marker_flow:m"
    assert "lil effects resolve marker_flow:m notify --done" in str(e)
    assert len(effects) == 1
    any_journal.resolve_marker("marker_flow:m", "notify", "done", by="tester")
    assert flow() == "done"
    assert len(effects) == 1
    with pytest.raises(JournalError, match=r"already resolved as 'done' by tester") as again:
        any_journal.resolve_marker("marker_flow:m", "notify", "redo", by="late")
    assert again.value.fix and "lil runs show marker_flow:m" in again.value.fix  # what to do


def test_resolving_a_marker_that_completed_says_it_is_not_in_doubt(any_journal) -> None:
    effects: list[str] = []
    assert _marker_flow(any_journal, effects, crash=False)() == "done"
    with pytest.raises(JournalError, match=r"completed; it is not in doubt") as err:
        any_journal.resolve_marker("marker_flow:m", "notify", "done", by="late")
    assert err.value.fix and "lil effects list" in err.value.fix


def test_marker_redo_runs_the_block_again_once(any_journal) -> None:
    effects: list[str] = []
    flow = _marker_flow(any_journal, effects)
    with pytest.raises(Boom):
        flow()
    any_journal.resolve_marker("marker_flow:m", 1, "redo", by="tester")
    assert flow() == "done"
    assert len(effects) == 2 and effects[0] == effects[1]  # same idempotency key both times
    assert flow() == "done" and len(effects) == 2


@pytest.mark.parametrize("decision,expected", [("done", 1), ("redo", 2)])
def test_reconcile_decides(any_journal, decision: str, expected: int) -> None:
    effects: list[str] = []
    seen = []

    def reconcile(m):  # type: ignore[no-untyped-def]
        seen.append((m.name, m.position, m.error["type"].endswith("Boom")))
        return decision

    flow = _marker_flow(any_journal, effects, reconcile=reconcile)
    with pytest.raises(Boom):
        flow()
    assert flow() == "done"
    assert len(effects) == expected and seen == [("notify", 1, True)]
    attempts = any_journal.get_run("marker_flow:m").attempts
    marker = [a for a in attempts if a.kind == "marker"]
    assert marker[0].resolution == decision and marker[0].resolved_by.startswith("reconcile@")


def test_completed_marker_is_skipped_and_positions_continue(any_journal) -> None:
    effects: list[str] = []
    calls = []
    state = {"fail": True}

    @durable(journal=any_journal, run_id="skip")
    def flow() -> str:
        with atomic_marker("send") as go:
            if go:
                effects.append("sent")
                step("inner", lambda: calls.append("inner") or 1)
        out = step("after", lambda: calls.append("after") or "ok")
        if state["fail"]:
            raise Boom()
        return out

    with pytest.raises(Boom):
        flow()
    state["fail"] = False
    assert flow() == "ok"
    assert effects == ["sent"] and calls == ["inner", "after"]


def test_second_session_cannot_execute_a_leased_run(any_journal) -> None:
    """Two journal objects are two sessions, as two processes would be."""
    other = _second_session(any_journal)
    started, release = threading.Event(), threading.Event()

    @durable(journal=any_journal, run_id="lease", name="lease_flow")
    def flow() -> int:
        started.set()
        release.wait(10)
        return step("one", lambda: 1)

    t = threading.Thread(target=flow)
    t.start()
    started.wait(10)

    @durable(journal=other, run_id="lease", name="lease_flow")
    def same() -> int:
        raise AssertionError("the body must not run while another session holds the run")

    with pytest.raises(RunLockedError, match="being executed by"):
        same()
    waiter = threading.Thread(target=lambda: results.append(_waiting_call(other)))
    results: list[object] = []
    waiter.start()
    time.sleep(0.2)
    release.set()
    t.join(10)
    waiter.join(10)
    assert results == [1]  # the waiter got the completed result without running the body


def _waiting_call(journal) -> object:  # type: ignore[no-untyped-def]
    @durable(journal=journal, run_id="lease", name="lease_flow", lock_timeout=10)
    def same() -> int:
        raise AssertionError("completed meanwhile; must not run")

    return same()


def _second_session(journal):  # type: ignore[no-untyped-def]
    from letitloop.journal._memory import MemoryJournal
    from letitloop.journal.duckdb._client import OwnerJournal

    if isinstance(journal, MemoryJournal):
        return MemoryJournal(journal.store)
    if type(journal).__name__ == "PgJournal":
        return type(journal)(journal.location)
    assert isinstance(journal, OwnerJournal)
    return OwnerJournal(journal.paths.db)


def test_lock_timeout_expires_with_a_clear_error(any_journal) -> None:
    other = _second_session(any_journal)
    any_journal.open_run(run_id="held", workflow="w", key="k")

    t0 = time.perf_counter()
    with pytest.raises(RunLockedError):
        other.open_run(run_id="held", workflow="w", key="k", lock_timeout=0.3)
    assert 0.25 < time.perf_counter() - t0 < 3
    any_journal.release_run("held")
    assert other.open_run(run_id="held", workflow="w", key="k").attempt == 2


def test_writes_need_the_lease(any_journal) -> None:
    other = _second_session(any_journal)
    state = any_journal.open_run(run_id="fenced", workflow="w", key="k")
    rec = {"k": "ok", "run": "fenced", "epoch": state.epoch, "pos": 0, "att": 1, "kind": "step"}
    rec.update(name="s", fp="", codec="json", out=b"1", next=None, ts=time.time())
    with pytest.raises(RunLockedError, match="does not hold"):
        other.append([rec])
    any_journal.append([rec])
    any_journal.append([rec])  # a resend of the same record is accepted and applied once
    assert [a.status for a in any_journal.get_run("fenced").attempts] == ["completed"]
    assert len([e for e in any_journal.events(run_id="fenced") if e.kind == "ok"]) == 1


def test_subscribers_receive_pushed_events(any_journal) -> None:
    got: list[object] = []
    arrived = threading.Event()

    def on_events(events):  # type: ignore[no-untyped-def]
        got.extend(events)
        if any(e.kind == "done" for e in events):
            arrived.set()

    sub = any_journal.subscribe(on_events)
    try:

        @durable(journal=any_journal, run_id="pushed")
        def flow() -> int:
            return step("one", lambda: 1)

        flow()
        assert arrived.wait(5)
        kinds = [e.kind for e in got if e.run_id.endswith(":pushed")]
        assert kinds[0] == "run" and kinds[-1] == "done" and "ok" in kinds
        seqs = [e.seq for e in got]
        assert seqs == sorted(seqs)
    finally:
        sub.close()
