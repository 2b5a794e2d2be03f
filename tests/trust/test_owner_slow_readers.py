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
from tests.trust.trust_helpers import Worker, pid_alive, raw, reply, start_owner

STEPS = 1000
UNREAD = 32 * 1024  # the owner's bound in these tests (LIL_OWNER_MAX_UNREAD), to drop quickly


def _writer(journal_path: Path, tmp_path: Path, run: str, steps: int = STEPS) -> Worker:
    side = tmp_path / f"{run}.side"
    return Worker(
        "steps_worker.py", journal_path, run, steps, 0, side, stderr_path=tmp_path / "err"
    )


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
        stuck.settimeout(10)
        got = 0
        while True:  # what was queued before the drop, then EOF
            chunk = stuck.recv(1 << 16)
            if not chunk:
                break
            got += len(chunk)
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
