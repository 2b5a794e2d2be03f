"""The Journal contract, one suite for every backend: in-memory, the DuckDB owner, PostgreSQL.

Each test speaks only the contract (``journal._contract``), so a backend passes exactly when it
keeps the same semantics. Two journal objects over one store are two sessions, as two processes
would be. The durable runtime's own semantics run on the three backends too, through
``tests/kernel/conftest.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from letitloop.errors import (
    ApprovalDecidedError,
    JournalError,
    RunCancelledError,
    RunLockedError,
)
from letitloop.journal._contract import CheckpointRow, CheckpointWrite, EventInfo, Proposal
from tests.helpers import wait_until

BACKENDS = ["memory", "owner", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of sessions of one fresh journal: ``backend()`` is one more session."""
    made: list[Any] = []
    if request.param == "memory":
        from letitloop.journal._memory import MemoryJournal, MemoryStore

        store = MemoryStore()

        def session() -> Any:
            made.append(MemoryJournal(store))
            return made[-1]

    elif request.param == "owner":
        from letitloop.journal.duckdb._client import OwnerJournal

        path = tmp_path / "journal" / "journal.duckdb"

        def session() -> Any:
            made.append(OwnerJournal(path))
            return made[-1]

    else:
        from letitloop.journal.postgres._journal import PgJournal

        url = request.getfixturevalue("pg_dsn")

        def session() -> Any:
            made.append(PgJournal(url))
            return made[-1]

    yield session
    for journal in made:
        journal.close()
    if request.param == "owner":
        from tests.conftest import _kill_owner

        _kill_owner(tmp_path / "journal" / "journal.duckdb")


def rec(k: str, run: str, **fields: Any) -> dict[str, Any]:
    return {"k": k, "run": run, "epoch": 0, "ts": time.time()} | fields


def step(run: str, pos: int, att: int = 1, name: str = "s", kind: str = "step") -> dict[str, Any]:
    return rec("step", run, pos=pos, att=att, kind=kind, name=name, fp="f")


def ok(run: str, pos: int, out: bytes = b"1", att: int = 1, name: str = "s") -> dict[str, Any]:
    return rec("ok", run, pos=pos, att=att, kind="step", name=name, fp="f", codec="json", out=out)


def released(j: Any, run: str) -> None:
    """Wait until the journal shows ``run`` unheld (the owner's release is not acknowledged)."""
    wait_until(lambda: j.get_run(run).run.holder is None, 10, what=f"{run} released", interval=0.01)


def start(j: Any, run: str = "wf:a", **kw: Any) -> Any:
    return j.open_run(run_id=run, workflow="wf", key=run.split(":", 1)[-1], **kw)


def test_a_run_resumes_in_another_session_with_its_completed_steps(backend: Any) -> None:
    a, b = backend(), backend()
    assert start(a).attempt == 1
    a.append([step("wf:a", 0)], sync=False)
    a.append([ok("wf:a", 0, b'"x"')])
    a.append([step("wf:a", 1)], sync=False)  # in flight when the process stops
    a.release_run("wf:a")
    state = start(b)
    assert state.attempt == 2 and state.status == "running"
    assert state.steps[0].status == "completed" and state.steps[0].output == b'"x"'
    assert state.steps[1].status == "started"
    assert [r.run_id for r in b.list_runs()] == ["wf:a"]


def test_a_held_run_is_refused_to_others_and_waited_for(backend: Any) -> None:
    a, b = backend(), backend()
    start(a)
    with pytest.raises(RunLockedError):
        start(b)
    with pytest.raises(RunLockedError):
        b.append([step("wf:a", 0)])  # writing needs the lease
    threading.Timer(0.3, a.release_run, ["wf:a"]).start()
    t0 = time.monotonic()
    assert start(b, lock_timeout=20).attempt == 2
    assert time.monotonic() - t0 >= 0.25
    assert b.list_runs()[0].holder is not None


def test_resent_records_are_dropped_and_conflicts_refused(backend: Any) -> None:
    a = backend()
    start(a)
    first = ok("wf:a", 0)
    a.append([step("wf:a", 0), first])
    a.append([first])  # a client resending after a reconnect
    kinds = [e.kind for e in a.events(run_id="wf:a")]
    assert kinds == ["run", "step", "ok"]
    with pytest.raises(JournalError, match="already completed"):
        a.append([ok("wf:a", 0, att=2)])
    assert len(a.get_run("wf:a").attempts) == 1


def test_large_outputs_are_fetched_on_replay(backend: Any) -> None:
    a = backend()
    start(a)
    big = b'"' + b"x" * 200_000 + b'"'
    a.append([step("wf:a", 0), ok("wf:a", 0, big)])
    a.release_run("wf:a")
    s = start(backend()).steps[0]
    data = s.output if not s.big else a.get_output("wf:a", 0, 0, s.attempt)[1]
    assert data == big
    assert a.get_output("wf:a", 0, 0, 1) == ("json", big)


def test_in_doubt_markers_are_resolved_once_by_someone_else(backend: Any) -> None:
    a, b = backend(), backend()
    start(a)
    a.append([step("wf:a", 0, name="pay", kind="marker")])
    with pytest.raises(RunLockedError):  # not while a process executes the run
        b.resolve_marker("wf:a", "pay", "done", "alice")
    a.release_run("wf:a")
    released(b, "wf:a")
    b.resolve_marker("wf:a", "pay", "done", "alice")
    with pytest.raises(JournalError, match="already resolved"):
        b.resolve_marker("wf:a", "pay", "redo", "bob")
    marker = start(a).steps[0]
    assert (marker.status, marker.resolution) == ("started", "done")


def test_a_resolution_and_a_reset_keep_the_persons_comment(backend: Any) -> None:
    a, b = backend(), backend()
    start(a)
    a.append([step("wf:a", 0, name="pay", kind="marker")])
    a.release_run("wf:a")
    released(b, "wf:a")
    b.resolve_marker("wf:a", "pay", "done", "alice", "the invoice shows it was paid")
    b.reset_run("wf:a", "bob", "start over with the new price list")
    notes = {e.kind: e.data.get("note") for e in b.events(run_id="wf:a")}
    assert notes["resolve"] == "the invoice shows it was paid"
    assert notes["reset"] == "start over with the new price list"
    with pytest.raises(JournalError, match="comment"):
        b.reset_run("wf:a", "bob", "x" * 5000)


def _ask(j: Any, run: str = "wf:a") -> str:
    from letitloop.journal._approvals import approval_id, approval_request as ask

    aid = approval_id(run, 0, 0)
    request = step(run, 0, name="ship", kind="approval") | {
        "ask": ask(aid, {"n": 1}, None, None, "reject")
    }
    j.append([request])
    return aid


def test_the_first_decision_of_an_approval_wins(backend: Any) -> None:
    a, b, c = backend(), backend(), backend()
    start(a)
    aid = _ask(a)
    assert [r.id for r in c.approvals(status="pending")] == [aid]
    row = b.decide_approval(aid[:6], approved=True, by="bob", comment="fine")
    assert (row.status, row.decided_by, row.comment) == ("approved", "bob", "fine")
    with pytest.raises(ApprovalDecidedError, match="already approved by bob"):
        c.decide_approval(aid, approved=False, by="carol")
    assert a.approvals(run_id="wf:a")[0].status == "approved"
    # the run's holder sees the decision and completes the approval step
    a.append([ok("wf:a", 0, b"true", name="ship") | {"kind": "approval"}])
    assert [e.kind for e in c.events(run_id="wf:a")] == ["run", "step", "answer", "ok"]


def test_two_deciders_at_once_get_one_winner(backend: Any) -> None:
    a = backend()
    start(a)
    aid = _ask(a)
    deciders = [backend() for _ in range(4)]
    results: list[str] = []

    def decide(i: int) -> None:
        try:
            deciders[i].decide_approval(aid, approved=i % 2 == 0, by=f"p{i}")
            results.append("won")
        except ApprovalDecidedError:
            results.append("lost")

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["lost", "lost", "lost", "won"]
    assert sum(e.kind == "answer" for e in a.events(run_id="wf:a")) == 1


def test_budgets_cancel_and_reset_from_outside_the_run(backend: Any) -> None:
    a, b = backend(), backend()
    start(a)
    a.append([step("wf:a", 0), ok("wf:a", 0)])
    b.set_budget("wf:a", "bob", usd_micros=5_000_000, tokens=None)
    b.cancel_run("wf:a", "bob", "wrong customer")
    with pytest.raises(RunCancelledError):  # the executing process stops at its next write
        a.append([step("wf:a", 1)])
    a.release_run("wf:a")
    with pytest.raises(RunCancelledError):
        start(a)
    info = b.get_run("wf:a").run
    assert info.status == "cancelled" and "wrong customer" in info.error["message"]
    b.reset_run("wf:a", "bob")
    state = start(a)
    assert (state.epoch, state.steps, state.status) == (1, {}, "running")
    assert state.budget == (5_000_000, None)  # the budget stays with the run


def test_a_rewind_supersedes_later_steps(backend: Any) -> None:
    a = backend()
    start(a)
    a.append([step("wf:a", i) for i in range(3)] + [ok("wf:a", i) for i in range(3)])
    a.append([rec("rewind", "wf:a", pos=1)])
    a.release_run("wf:a")
    steps = start(a).steps
    assert [steps[i].status for i in range(3)] == ["completed", "superseded", "superseded"]
    statuses = [x.status for x in a.get_run("wf:a").attempts]
    assert statuses == ["completed", "superseded", "superseded"]


def test_cache_entries_are_shared_and_cleared(backend: Any) -> None:
    a, b = backend(), backend()
    a.cache_put("k1", "mod.fn", ("json", b"41"), 7, None)
    a.cache_put("k2", "mod.other", ("json", b"42"), 0, time.time() + 60)
    a.append([rec("uncache", "", fn="nothing")])  # a synced write carries the unsynced ones
    hit = b.cache_get("k1")
    assert hit is not None and (hit.codec, hit.output, hit.cost_micros) == ("json", b"41", 7)
    assert sorted(e.key for e in b.cache_list()) == ["k1", "k2"]
    b.cache_clear("mod.fn")
    assert a.cache_get("k1") is None and a.cache_get("k2") is not None
    b.cache_clear()
    assert a.cache_list() == []


def test_splice_proposals_are_decided_once_listed(backend: Any) -> None:
    a, b = backend(), backend()
    p = Proposal(
        "p1",
        "app.py",
        "f",
        "def f(): ...",
        "faster",
        "agent",
        time.time(),
        "b",
        "o",
        None,
        "pending",
    )
    a.propose(p)
    assert [x.id for x in b.proposals("pending")] == ["p1"]
    b.decide("p1", "applied", "alice", "looks right")
    (done,) = a.proposals()
    assert (done.state, done.decided_by, done.note) == ("applied", "alice", "looks right")
    assert a.proposals("pending") == []


def test_events_follow_a_cursor_and_are_pushed(backend: Any) -> None:
    a, b = backend(), backend()
    got: list[list[EventInfo]] = []
    arrived = threading.Event()

    def on_events(events: list[EventInfo]) -> None:
        got.append(events)
        if any(e.kind == "done" for e in events):
            arrived.set()

    sub = b.subscribe(on_events, run_id="wf:a")
    try:
        start(a)
        start(a, run="wf:other")
        a.append([step("wf:a", 0), ok("wf:a", 0)])
        a.append([rec("done", "wf:a", codec="json", out=b"1")])
        assert arrived.wait(10), got
    finally:
        sub.close()
    pushed = [e for batch in got for e in batch]
    assert {e.run_id for e in pushed} == {"wf:a"}
    assert [e.kind for e in pushed if e.kind != "interrupted"] == ["run", "step", "ok", "done"]
    every = b.events()
    assert [e.seq for e in every] == sorted(e.seq for e in every)
    assert len({e.seq for e in every}) == len(every) == 5
    mid = every[2].seq
    assert [e.seq for e in b.events(after=mid)] == [e.seq for e in every[3:]]
    assert [e.kind for e in b.events(run_id="wf:a", after=0, limit=2)] == ["run", "step"]


def test_graph_checkpoints_copy_prune_and_delete(backend: Any) -> None:
    a, b = backend(), backend()
    for i in range(3):
        row = CheckpointRow("t1", "", f"00{i}", f"00{i - 1}" if i else None, ("json", b"{}"),
                            ("json", b"{}"), time.time(), [])  # fmt: skip
        a.put_checkpoint(row, workflow="langgraph:g", status="running", meta={"step": i})
    write = CheckpointWrite("task", 0, "messages", ("json", b"[1]"), "")
    a.put_checkpoint_writes("t1", "", "002", "task", "", [write])
    a.put_checkpoint_writes("t1", "", "002", "task", "", [write._replace(value=("json", b"[2]"))])
    newest = b.checkpoints(thread_id="t1", limit=1)[0]
    assert newest.checkpoint_id == "002" and newest.writes[0].value == ("json", b"[1]")
    assert [r.checkpoint_id for r in b.checkpoints(thread_id="t1", filter={"step": 1})] == ["001"]
    assert [r.checkpoint_id for r in b.checkpoints(thread_id="t1", before="002")] == ["001", "000"]
    thread = next(r for r in b.list_runs() if r.run_id == "langgraph:t1")
    assert thread.steps_done == 3 and thread.workflow == "langgraph:g"
    b.copy_checkpoints("t1", "t2")
    assert len(a.checkpoints(thread_id="t2")) == 3
    b.delete_checkpoints(thread_ids=["t1"], keep_latest=True)
    assert [r.checkpoint_id for r in a.checkpoints(thread_id="t1")] == ["002"]
    b.delete_checkpoints(thread_ids=["t2"])
    assert a.checkpoints(thread_id="t2") == []
    assert "langgraph:t2" not in {r.run_id for r in a.list_runs()}


def test_gc_find_run_and_listing_filters(backend: Any) -> None:
    a = backend()
    for run in ("wf:keep", "wf:old"):
        start(a, run=run)
        a.append([rec("done", run, codec="json", out=b"1")])
        a.release_run(run)
    start(a, run="wf:live")
    assert a.find_run("old") == "wf:old"
    with pytest.raises(JournalError, match="matches 3 runs"):
        a.find_run("wf:")
    assert {r.run_id for r in a.list_runs(status="completed")} == {"wf:keep", "wf:old"}
    assert [r.run_id for r in a.list_runs(status="running")] == ["wf:live"]
    assert a.gc(older_than=time.time() + 1) == 2
    assert [r.run_id for r in a.list_runs()] == ["wf:live"]
    a.release_run("wf:live")
    assert [r.status for r in a.list_runs()] == ["interrupted"]


def test_an_unwaited_step_start_reaches_other_sessions_soon(backend: Any) -> None:
    a, b = backend(), backend()
    start(a)
    a.append([step("wf:a", 0, name="slow")], sync=False)  # the step then runs for a while
    wait_until(
        lambda: b.get_run("wf:a").run.current_step == "slow",
        5,
        what="the step's start to show",
        interval=0.005,
    )
    a.append([ok("wf:a", 0, name="slow")])
    assert [e.kind for e in b.events(run_id="wf:a")] == ["run", "step", "ok"]


def test_results_of_many_runs_come_in_one_read(backend: Any) -> None:
    """``results`` names the completed runs among those asked for, with their encoded results
    (a map re-attaching finds its finished items), and leaves out running and unknown ones."""
    a, b = backend(), backend()
    for i in range(3):
        run = f"wf:r{i}"
        start(a, run)
        a.append([step(run, 0)], sync=False)
        a.append([ok(run, 0, b'"v"')])
        if i < 2:  # r2 stays running
            a.append([rec("done", run, codec="json", out=f"{i * 10}".encode())])
        a.release_run(run)
    asked = ["wf:r0", "wf:r1", "wf:r2", "wf:nobody"] + [f"wf:x{i}" for i in range(1500)]
    got = b.results(asked)  # more names than one owner request takes: chunked
    assert got == {"wf:r0": ("json", b"0"), "wf:r1": ("json", b"10")}
    assert b.results([]) == {}
