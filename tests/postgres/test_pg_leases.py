"""Leases, fencing and approvals on PostgreSQL with real processes and real signals.

* a SIGKILLed holder frees its run at once (its connection, and so its advisory lock, is gone);
* a SIGSTOPped holder keeps its connection but stops heartbeating: after ``LIL_LEASE_TTL``
  another process takes the run over and finishes it; resumed with SIGCONT, the old holder's
  next write is refused (``LeaseLostError``) and it writes nothing;
* an approval asked by a blocked workflow is decided from another process, first decision wins.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from letitloop.errors import ApprovalDecidedError, LeaseLostError, RunLockedError
from letitloop.journal._contract import EventInfo
from letitloop.journal.postgres._journal import PgJournal
from tests.crash.crash_helpers import Worker
from tests.helpers import wait_until

WORKER = str(Path(__file__).resolve().parent / "workers" / "pg_worker.py")
TTL = 2.0


def _result(w: Worker) -> object:
    line = w.wait_prefix("RESULT ", 0)
    return json.loads(line.split(" ", 1)[1]) if line else None


@pytest.mark.timeout(120)
def test_a_killed_holder_frees_its_run_at_once(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PG_WORKER_PAUSE", "0.2")
    a = Worker(WORKER, "lease", pg_dsn, "k1", 50, stderr_path=tmp_path / "a.err")
    try:
        assert a.wait_prefix("S 1", 60), a.diagnostics()
        journal = PgJournal(pg_dsn)
        with pytest.raises(RunLockedError):  # held by a live process
            journal.open_run(run_id="lease:k1", workflow="lease", key="k1")
        assert a.sigkill()
        t0 = time.monotonic()
        state = journal.open_run(run_id="lease:k1", workflow="lease", key="k1", lock_timeout=10)
        freed = time.monotonic() - t0
        assert freed < TTL / 2, f"took {freed:.2f} s: the lease waited for its TTL"
        assert state.attempt == 2 and state.steps[0].status == "completed"
        journal.close()
    finally:
        a.kill()


@pytest.mark.timeout(120)
def test_a_killed_holder_is_pushed_as_interrupted(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Subscribers learn that the process executing a run is gone, as from the owner."""
    monkeypatch.setenv("PG_WORKER_PAUSE", "0.2")
    journal = PgJournal(pg_dsn)
    seen: list[EventInfo] = []
    interrupted = threading.Event()

    def on_events(events: list[EventInfo]) -> None:
        seen.extend(events)
        if any(e.kind == "interrupted" for e in events):
            interrupted.set()

    sub = journal.subscribe(on_events)
    done = Worker(WORKER, "lease", pg_dsn, "quick", 2, stderr_path=tmp_path / "q.err")
    a = Worker(WORKER, "lease", pg_dsn, "k2", 50, stderr_path=tmp_path / "a.err")
    try:
        assert done.finish(60) == 0, done.diagnostics()
        assert a.wait_prefix("S 1", 60), a.diagnostics()
        time.sleep(1.5)  # the follower has looked while the run was held
        assert not interrupted.is_set(), seen  # a finished run is not interrupted
        assert a.sigkill()
        assert interrupted.wait(10), seen
        (event,) = [e for e in seen if e.kind == "interrupted"]
        assert event.run_id == "lease:k2" and event.data["by"].startswith(f"{a.pid}@")
        assert journal.get_run("lease:k2").run.status == "interrupted"
    finally:
        sub.close()
        a.kill()
        done.kill()
        journal.close()


@pytest.mark.timeout(180)
def test_a_frozen_holder_is_taken_over_and_then_fenced(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIL_LEASE_TTL", str(TTL))
    n = 12
    monkeypatch.setenv("PG_WORKER_PAUSE", "0.3")
    a = Worker(WORKER, "lease", pg_dsn, "fence", n, stderr_path=tmp_path / "a.err")
    b: Worker | None = None
    try:
        assert a.wait_prefix("S 2", 60), a.diagnostics()
        assert a.wait_prefix("X 3", 10), a.diagnostics()  # inside step 3 (0.3 s long)
        time.sleep(0.1)  # its start, not waited for, is journaled within a few ms
        os.kill(a.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        monkeypatch.setenv("PG_WORKER_PAUSE", "0.01")
        b = Worker(WORKER, "lease", pg_dsn, "fence", n, stderr_path=tmp_path / "b.err")
        assert b.wait_prefix("RESULT", 60), b.diagnostics()
        took = time.monotonic() - stopped
        assert took >= TTL - TTL / 3 - 0.1, f"taken over after {took:.2f} s, before the TTL"
        assert _result(b) == sum(range(n))
        assert b.finish(30) == 0

        journal = PgJournal(pg_dsn)
        before = journal.events(run_id="lease:fence")
        os.kill(a.pid, signal.SIGCONT)
        assert a.finish(60) == 3, a.diagnostics()
        error = a.wait_prefix("ERROR", 0)
        assert error is not None and error.startswith(f"ERROR {LeaseLostError.__name__}"), error
        assert "lost its lease on run lease:fence" in error
        assert "nobody" not in error and "has been completed there since" in error, error
        assert not any(line.startswith("S 3") for line in a.snapshot())  # its step 3 never acked
        after = journal.events(run_id="lease:fence")
        assert after == before, "the fenced holder wrote to the run after it lost the lease"
        detail = journal.get_run("lease:fence")
        assert detail.run.status == "completed" and detail.run.attempt == 2
        by_pos = defaultdict(list)
        for att in detail.attempts:
            by_pos[att.position].append(att)
        assert sorted(by_pos) == list(range(n))
        for pos, attempts in by_pos.items():
            done = [x for x in attempts if x.status == "completed"]
            assert len(done) == 1, (pos, attempts)
        # the step A was inside: started by A (attempt 1), completed by B (attempt 2)
        assert [(x.attempt, x.status) for x in by_pos[3]] == [(1, "started"), (2, "completed")]
        journal.close()
    finally:
        os.kill(a.pid, signal.SIGCONT) if a.proc.poll() is None else None
        a.kill()
        if b is not None:
            b.kill()


def test_a_zombie_session_is_fenced_in_process(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same fencing without processes: a silent session's writes are refused."""
    monkeypatch.setenv("LIL_LEASE_TTL", "0.5")
    old, new = PgJournal(pg_dsn), PgJournal(pg_dsn)
    old.open_run(run_id="z", workflow="w", key="z")
    assert old._heartbeat is not None
    old._heartbeat.close()  # a frozen process sends no heartbeat
    with pytest.raises(RunLockedError):
        new.open_run(run_id="z", workflow="w", key="z")
    state = new.open_run(run_id="z", workflow="w", key="z", lock_timeout=10)
    assert state.attempt == 2
    step = {"k": "step", "run": "z", "epoch": 0, "pos": 0, "att": 1, "kind": "step"}
    step |= {"name": "s", "fp": "f", "ts": time.time()}
    with pytest.raises(LeaseLostError, match="lost its lease on run z"):
        old.append([step])
    assert [e.kind for e in new.events(run_id="z")] == ["run", "run"]
    new.append([step])
    assert [e.kind for e in new.events(run_id="z")] == ["run", "run", "step"]
    old.close()
    new.close()


@pytest.mark.timeout(120)
def test_an_approval_is_decided_from_another_process(pg_dsn: str, tmp_path: Path) -> None:
    w = Worker(WORKER, "approve", pg_dsn, "ap1", stderr_path=tmp_path / "w.err")
    try:
        assert w.wait_prefix("READY", 60), w.diagnostics()
        journal = PgJournal(pg_dsn)
        wait_until(lambda: journal.approvals(status="pending"), 60, what=w.diagnostics)
        (row,) = journal.approvals(status="pending")
        assert (row.run_id, row.name, row.payload) == ("approve:ap1", "ship", {"title": "v2"})
        decided = time.monotonic()
        journal.decide_approval(row.id, approved=True, by="alice", comment="go")
        with pytest.raises(ApprovalDecidedError, match="already approved by alice"):
            PgJournal(pg_dsn).decide_approval(row.id, approved=False, by="bob")
        assert w.wait_prefix("RESULT", 30), w.diagnostics()
        woke = time.monotonic() - decided
        result = _result(w)
        assert result == {"approved": True, "by": "alice", "comment": "go", "done": "shipped"}
        assert woke < 10, f"the blocked workflow took {woke:.1f} s to see the decision"
        assert journal.get_run("approve:ap1").run.status == "completed"
        journal.close()
    finally:
        w.kill()
