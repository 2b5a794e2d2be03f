"""A client that stops reading stalls nobody (issue 14, point 4), on a real owner process.

On the old owner one subscriber that never read stopped every writer after about 160 steps: the
event loop blocked in ``sendall`` on its full socket. Now output is bounded per connection and
sent without blocking; a subscriber over the bound is dropped and re-reads when it reconnects.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from letitloop.journal.duckdb import _wire
from tests.crash.crash_helpers import Worker
from tests.helpers import pid_alive
from tests.trust.trust_helpers import raw, reply, start_owner

STEPS = 1000
UNREAD = 32 * 1024  # the owner's bound in these tests (LIL_OWNER_MAX_UNREAD), to drop quickly


def _writer(journal_path: Path, tmp_path: Path, run: str, steps: int = STEPS) -> Worker:
    side = tmp_path / f"{run}.side"
    return Worker(
        "steps_worker.py", journal_path, run, steps, 0, side, stderr_path=tmp_path / "err"
    )


def _drained(sock: socket.socket) -> int:
    """The bytes the owner had queued for a dropped client, read until its EOF."""
    sock.settimeout(10)
    got = 0
    while chunk := sock.recv(1 << 16):
        got += len(chunk)
    return got


@pytest.mark.timeout(180)
def test_a_subscriber_that_never_reads_does_not_stall_writers(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare subscriber with a tiny receive buffer never reads; a 1000-step writer still
    finishes (within 90 s; it takes a few seconds), a reading subscriber sees the run complete,
    and the stuck one was dropped (its socket reaches EOF once drained)."""
    monkeypatch.setenv("LIL_OWNER_MAX_UNREAD", str(UNREAD))
    journal, pid = start_owner(journal_path)
    stuck = raw(journal_path)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)

    stuck.sendall(_wire.pack({"op": "subscribe", "run": None, "id": 1}))
    assert reply(stuck)["ok"]
    kinds: list[str] = []
    done = threading.Event()

    def seen(events: list) -> None:  # type: ignore[type-arg]
        for e in events:
            kinds.append(e.kind)
            if e.run_id == "steps:slow" and e.kind == "done":
                done.set()

    good = journal.subscribe(seen)
    w = _writer(journal_path, tmp_path, "slow")
    try:
        assert w.wait_prefix("RESULT", 90), f"the writer stalled: {w.diagnostics()}"
        assert w.finish(30) == 0
        assert done.wait(10), "the reading subscriber did not see the run complete"
        assert kinds.count("ok") >= STEPS
        assert pid_alive(pid) and journal.stats()["pid"] == pid
        got = _drained(stuck)
        assert got < UNREAD + 512 * 1024, "the owner kept queueing for a client that never read"
    finally:
        w.kill()
        good.close()
        stuck.close()
        journal.close()


@pytest.mark.timeout(180)
def test_a_sigstopped_subscriber_is_dropped_and_rereads_on_resume(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real subscriber process (what lil-tui does) is SIGSTOPped: a 1500-step writer finishes;
    after SIGCONT the subscriber reconnects by itself and is told to re-read (REREAD)."""
    monkeypatch.setenv("LIL_OWNER_MAX_UNREAD", str(UNREAD))
    journal, pid = start_owner(journal_path)
    sub = Worker("subscriber_worker.py", journal_path, stderr_path=tmp_path / "sub.err")
    w: Worker | None = None
    try:
        assert sub.wait_prefix("READY", 30), sub.diagnostics()
        sub.proc.send_signal(signal.SIGSTOP)
        w = _writer(journal_path, tmp_path, "stopped-sub", 1500)
        t0 = time.monotonic()
        assert w.wait_prefix("RESULT", 90), f"the writer stalled: {w.diagnostics()}"
        elapsed = time.monotonic() - t0
        assert w.finish(30) == 0
        sub.proc.send_signal(signal.SIGCONT)
        assert sub.wait_prefix("REREAD", 30), f"no re-read after resume: {sub.snapshot()[-5:]}"
        assert journal.stats()["pid"] == pid
        print(f"\n1500 steps under a stopped subscriber: {elapsed:.1f} s")
    finally:
        sub.proc.send_signal(signal.SIGCONT)
        sub.kill()
        if w is not None:
            w.kill()
        journal.close()


@pytest.mark.timeout(180)
def test_a_reader_that_stops_reading_under_back_pressure_stalls_nobody(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back-pressure on (a fold lag bound of 100 records, no folds by time): the event loop
    stops reading requests whenever 100 records wait for DuckDB. A bare client pipelines 200
    reads of the whole event history (each one a fold, then a reply that grows with the run)
    and never reads a byte. A 1000-step writer still finishes, another client's reads are
    answered, and the stuck reader was dropped at its bound."""
    monkeypatch.setenv("LIL_OWNER_MAX_UNREAD", str(UNREAD))
    monkeypatch.setenv("LIL_OWNER_MAX_FOLD_LAG", "100")
    monkeypatch.setenv("LIL_OWNER_FOLD_DELAY", "3600")
    journal, pid = start_owner(journal_path)
    stuck = raw(journal_path)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    w = _writer(journal_path, tmp_path, "pressed")
    try:
        assert w.wait_prefix("READY", 30), w.diagnostics()
        for i in range(200):
            req = {"op": "events", "after": 0, "run": None, "limit": 100_000, "id": 10 + i}
            stuck.sendall(_wire.pack(req))
        assert w.wait_prefix("RESULT", 90), f"the writer stalled: {w.diagnostics()}"
        assert w.finish(30) == 0
        (run,) = journal.list_runs(workflow="steps")
        assert len(journal.get_run(run.run_id).attempts) == STEPS
        stats = journal.stats()
        assert stats["pid"] == pid and pid_alive(pid)
        print(f"\nback-pressure waits: {stats.get('lag_waits', 0)}")
        got = _drained(stuck)
        assert got < UNREAD + 1024 * 1024, "the owner kept queueing for a client that never read"
    finally:
        w.kill()
        stuck.close()
        journal.close()


@pytest.mark.timeout(180)
def test_a_slow_query_does_not_hold_writers_back(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``lil journal sql`` may run for up to 30 s; with the fold lag bounded (100 records here),
    a query run where the folds run would stop every writer once 100 records waited for it. A
    query that runs until its deadline is sent; a 1000-step writer started after it finishes
    long before the query's answer (the deadline's error) comes back."""
    monkeypatch.setenv("LIL_OWNER_MAX_FOLD_LAG", "100")
    journal, pid = start_owner(journal_path)
    asker = raw(journal_path)
    query = "SELECT count(*) FROM range(1000000000000)"  # runs to its deadline
    asker.sendall(_wire.pack({"op": "sql", "sql": query, "id": 7}))
    time.sleep(0.5)  # it runs now
    w = _writer(journal_path, tmp_path, "beside-a-query")
    try:
        t0 = time.monotonic()
        assert w.wait_prefix("RESULT", 25), f"the writer stalled: {w.diagnostics()}"
        assert w.finish(30) == 0
        took = time.monotonic() - t0
        asker.settimeout(0)
        try:
            early = asker.recv(1)
        except BlockingIOError:
            early = b""
        assert not early, "the query ended before the writer: it proves nothing"
        (run,) = journal.list_runs(workflow="steps")  # other reads are answered meanwhile
        assert len(journal.get_run(run.run_id).attempts) == STEPS
        got = reply(asker, timeout=60)
        assert not got["ok"] and "longer than" in got["error"]["message"], got
        assert journal.stats()["pid"] == pid
        print(f"\n1000 steps beside a 30 s query: {took:.1f} s")
    finally:
        w.kill()
        asker.close()
        journal.close()


@pytest.mark.timeout(60)
def test_queries_waiting_are_bounded(journal_path: Path) -> None:
    """Eight slow queries are taken (one runs, seven wait); a ninth is refused at once, saying
    why, and the owner goes on answering everything else."""
    journal, pid = start_owner(journal_path)
    asker = raw(journal_path)
    try:
        for i in range(9):
            req = {"op": "sql", "sql": "SELECT count(*) FROM range(1000000000000)", "id": 100 + i}
            asker.sendall(_wire.pack(req))
        got = reply(asker, timeout=10)
        assert got["re"] == 108 and not got["ok"], got
        assert "already waiting" in got["error"]["message"] and got["error"]["fix"]
        assert journal.stats()["pid"] == pid
        assert journal.list_runs() == []
    finally:
        asker.close()
        journal.close()
