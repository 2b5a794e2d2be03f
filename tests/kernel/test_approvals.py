"""Approval and suspend semantics on every journal backend (in-memory and the real owner)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from letitloop import ApprovalPending, Suspended, approval, durable, step, suspend
from letitloop.errors import ApprovalDecidedError, ConfigError, JournalError
from letitloop.journal import _approvals
from tests.helpers import wait_until

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def flow(journal: Any, calls: list[str], **ask: Any) -> Any:
    @durable(journal=journal, run_id="a1", name="flow")
    def run() -> Any:
        n = step("n", lambda: calls.append("n") or 1)
        d = approval("go", {"n": n}, schema=SCHEMA, **ask)
        step("after", lambda: calls.append("after"))
        return d

    return run


def decide_soon(journal: Any, delay: float = 0.0, **kw: Any) -> threading.Thread:
    def go() -> None:
        rows = wait_until(  # past the flows' own 1m approval timeout
            lambda: journal.approvals(status="pending"),
            120,
            what="a pending approval",
            interval=0.02,
        )
        time.sleep(delay)
        journal.decide_approval(rows[0].id, **kw)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


def test_approval_waits_and_replays_without_waiting(any_journal: Any) -> None:
    calls: list[str] = []
    decide_soon(any_journal, approved=True, by="ana", comment="ok", payload={"n": 5})
    d = flow(any_journal, calls, timeout="1m")()
    assert (d.approved, d.payload, d.comment, d.by, d.timed_out) == (
        True,
        {"n": 5},
        "ok",
        "ana",
        False,
    )
    again = flow(any_journal, calls, timeout="1m")()  # completed run: journaled result
    assert again == d and calls == ["n", "after"]
    row = any_journal.approvals()[0]
    assert row.status == "approved" and row.payload == {"n": 1} and row.edited == {"n": 5}


def test_edited_payload_must_satisfy_the_schema_and_nothing_is_written(any_journal: Any) -> None:
    calls: list[str] = []
    with pytest.raises(ApprovalPending):
        flow(any_journal, calls, wait=False)()
    aid = any_journal.approvals()[0].id
    with pytest.raises(ConfigError, match="does not match the approval's schema at n"):
        any_journal.decide_approval(aid, approved=True, by="ana", payload={"n": "five"})
    assert any_journal.approvals()[0].status == "pending"
    any_journal.decide_approval(aid, approved=False, by="bo")
    with pytest.raises(ApprovalDecidedError, match="already rejected by bo"):
        any_journal.decide_approval(aid, approved=True, by="ana")
    d = flow(any_journal, calls, wait=False)()
    assert d.approved is False and d.payload == {"n": 1} and calls == ["n", "after"]


def test_bad_requests_fail_before_journaling(any_journal: Any) -> None:
    @durable(journal=any_journal, run_id="bad", name="bad", ignore_args=True)
    def bad(payload: Any, **kw: Any) -> Any:
        return approval("x", payload, **kw)

    with pytest.raises(ConfigError, match="must be JSON data"):
        bad(object())
    with pytest.raises(ConfigError, match="on_timeout must be one of"):
        bad(1, on_timeout="maybe")
    with pytest.raises(ConfigError, match="duration like '30m'"):
        bad(1, timeout="soon")
    with pytest.raises(ConfigError, match="does not match the approval's schema"):
        bad({"n": "x"}, schema=SCHEMA)
    assert any_journal.approvals() == []


def test_timeout_decides_as_of_the_deadline(any_journal: Any) -> None:
    calls: list[str] = []
    before = time.time()
    d = flow(any_journal, calls, timeout=0.3, on_timeout="approve")()
    assert d.approved and d.timed_out and d.by == "timeout"
    assert before + 0.3 <= d.at <= time.time()
    row = any_journal.approvals()[0]
    assert row.decided_at == pytest.approx(row.deadline)


def test_reset_cancels_a_pending_approval(any_journal: Any) -> None:
    with pytest.raises(ApprovalPending) as info:
        flow(any_journal, [], wait=False)()
    run_id = info.value.run_id
    assert any_journal.get_run(run_id).run.status == "suspended"
    any_journal.reset_run(run_id, by="ops")
    assert any_journal.approvals()[0].status == "cancelled"
    with pytest.raises(JournalError, match="was cancelled: run flow:a1 was reset"):
        any_journal.decide_approval(info.value.approval_id, approved=True, by="late")


def test_ids_match_by_prefix_and_unknown_ids_say_how_to_list(any_journal: Any) -> None:
    rows = [_approvals.info(_ask_record("r", i)) for i in range(40)]
    first = rows[0].id
    assert _approvals.match_approval(first[:8], rows).id == first
    with pytest.raises(JournalError, match="lil approvals list"):
        _approvals.match_approval("zzz", rows)
    with pytest.raises(JournalError, match="ambiguous"):
        _approvals.match_approval("", rows)


def _ask_record(run: str, pos: int) -> dict[str, Any]:
    aid = _approvals.approval_id(run, 0, pos)
    return {
        "run": run,
        "epoch": 0,
        "pos": pos,
        "att": 1,
        "name": "x",
        "ts": 1.0,
        "ask": _approvals.approval_request(aid, {"i": pos}, None, None, "reject"),
    }


def test_suspend_stops_once_and_the_next_call_continues(any_journal: Any) -> None:
    calls: list[str] = []

    @durable(journal=any_journal, run_id="p", name="paused")
    def paused() -> int:
        step("one", lambda: calls.append("one"))
        suspend("waiting for Monday")
        step("two", lambda: calls.append("two"))
        return 2

    with pytest.raises(Suspended, match="waiting for Monday"):
        paused()
    info = any_journal.get_run("paused:p").run
    assert info.status == "suspended" and info.error["message"] == "waiting for Monday"
    assert paused() == 2 and calls == ["one", "two"]


def test_a_resent_answer_is_idempotent(any_journal: Any) -> None:
    with pytest.raises(ApprovalPending):
        flow(any_journal, [], wait=False)()
    row = any_journal.approvals()[0]
    rec = _approvals.answer_record(row, True, "ana", None, None, None)
    any_journal.append([rec])
    any_journal.append([rec])  # a client resending after a reconnect: not "already decided"
    assert any_journal.approvals()[0].decided_by == "ana"


def test_cancel_stops_a_run_until_it_is_reset(any_journal: Any) -> None:
    from letitloop.errors import RunCancelledError

    calls: list[str] = []

    @durable(journal=any_journal, run_id="c1", name="cancellable")
    def work() -> int:
        step("one", lambda: calls.append("one"))
        suspend("wait for the go-ahead")
        step("two", lambda: calls.append("two"))
        return 2

    with pytest.raises(Suspended):
        work()
    with pytest.raises(ApprovalPending):
        flow(any_journal, [], wait=False)()
    any_journal.cancel_run("cancellable:c1", by="ops", reason="wrong customer")
    info = any_journal.get_run("cancellable:c1").run
    assert (
        info.status == "cancelled" and info.error["message"] == "cancelled by ops: wrong customer"
    )
    with pytest.raises(RunCancelledError, match="lil runs reset cancellable:c1"):
        work()
    assert calls == ["one"]
    any_journal.reset_run("cancellable:c1", by="ops")
    with pytest.raises(Suspended):
        work()
    assert calls == ["one", "one"]
    flow_run = any_journal.approvals()[0].run_id
    any_journal.cancel_run(flow_run, by="ops")
    assert any_journal.approvals()[0].status == "cancelled"  # its pending approval goes too


def test_a_completed_run_cannot_be_cancelled(any_journal: Any) -> None:
    @durable(journal=any_journal, run_id="done", name="finished")
    def finished() -> int:
        return step("x", lambda: 1)

    finished()
    with pytest.raises(JournalError, match="already completed"):
        any_journal.cancel_run("finished:done", by="ops")


async def test_async_approval_leaves_the_event_loop_free(any_journal: Any) -> None:
    import asyncio

    from letitloop import async_approval, async_step, durable_async

    ticks: list[int] = []

    @durable_async(journal=any_journal, run_id="a1", name="asyncflow")
    async def asyncflow() -> Any:
        draft = await async_step("draft", lambda: {"n": 3})

        async def ticker() -> None:
            while True:
                ticks.append(1)
                await asyncio.sleep(0.01)

        running = asyncio.create_task(ticker())
        decision = await async_approval("go", draft, schema=SCHEMA)
        running.cancel()
        return [decision.approved, decision.payload, decision.by]

    decide_soon(any_journal, delay=0.4, approved=True, by="ana", payload={"n": 4})
    assert await asyncflow() == [True, {"n": 4}, "ana"]
    assert len(ticks) >= 10  # the loop ran the ticker while the approval waited
    before = len(ticks)
    assert await asyncflow() == [True, {"n": 4}, "ana"]  # completed: the journaled result
    assert len(ticks) == before
