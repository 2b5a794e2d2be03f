"""The journal is never stranded by how its owner starts or where its socket went (issue 14,
points 6 and 7), with real processes: a real SIGKILL of owners while they start, a real unlink
of the live owner's socket file.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from letitloop.journal._config import JournalPaths
from tests.crash.crash_helpers import Worker
from tests.helpers import child_env, owner_pids, pid_alive, run_lil, wait_gone, wait_until
from tests.trust.trust_helpers import start_owner


def _expected(n: int) -> int:
    acc = 1
    for i in range(n):
        acc = (acc * 7 + i) % 1_000_003
    return acc


@pytest.mark.timeout(120)
def test_owners_killed_while_starting_are_started_again(journal_path: Path, tmp_path: Path) -> None:
    """The first 3 owners the workflow starts are SIGKILLed as soon as they exist (before they
    can say "ready"); the workflow starts a 4th and finishes. The old client failed with
    "exited with status -9" at the first."""
    killed: list[int] = []
    stop = threading.Event()

    def killer() -> None:
        while not stop.is_set() and len(killed) < 3:
            for pid in owner_pids(journal_path):
                if pid not in killed:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.0005)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    side = tmp_path / "side"
    w = Worker("steps_worker.py", journal_path, "boot", 5, 0, side, stderr_path=tmp_path / "err")
    try:
        line = w.wait_for(lambda x: x.startswith(("RESULT", "ERROR")), 60)
        assert line == f"RESULT {_expected(5)}", f"{line}: {w.diagnostics()}"
        assert w.finish(30) == 0
    finally:
        stop.set()
        thread.join(5)
        w.kill()
    assert len(killed) == 3
    assert not JournalPaths(journal_path).pid_file.exists() or all(not pid_alive(p) for p in killed)


@pytest.mark.timeout(120)
def test_an_owner_failing_on_its_own_stops_the_client_with_its_log(
    journal_path: Path, tmp_path: Path
) -> None:
    """An owner that exits because of its own error (the log directory is a plain file) is not
    restarted in a loop: the workflow fails at once with the owner's status and log."""
    paths = JournalPaths(journal_path)
    paths.root.mkdir(parents=True)
    paths.log_dir.write_text("not a directory")
    w = Worker(
        "steps_worker.py", journal_path, "bad", 3, 0, tmp_path / "s", stderr_path=tmp_path / "e"
    )
    try:
        t0 = time.monotonic()
        line = w.wait_prefix("ERROR", 60)
        elapsed = time.monotonic() - t0
    finally:
        w.kill()
    assert line is not None, w.diagnostics()
    assert "exited with status 1" in line and "the owner's log ends" in line, line
    assert "FileExistsError" in line or "NotADirectoryError" in line, line
    assert elapsed < 30


@pytest.mark.timeout(120)
def test_a_deleted_socket_file_is_recreated_and_new_clients_connect(journal_path: Path) -> None:
    """The live owner's socket file is unlinked (a temp-dir cleaner): a new ``lil runs list``
    connects to the same owner within seconds (old owner: new clients could not connect, and
    the owners they started could not win the lock, until LIL_CONNECT_TIMEOUT)."""
    journal, pid = start_owner(journal_path)
    paths = JournalPaths(journal_path)
    paths.socket.unlink()
    paths.pid_file.unlink()
    env = child_env(LIL_CONNECT_TIMEOUT="8")
    t0 = time.monotonic()
    done = run_lil("runs", "list", "--journal", str(journal_path), env=env, timeout=60)
    elapsed = time.monotonic() - t0
    assert done.returncode == 0, done.stdout + done.stderr
    assert elapsed < 6, elapsed
    assert paths.socket.exists()
    wait_until(paths.pid_file.exists, 5, what="the pid file", interval=0.005)
    assert journal.stats()["pid"] == pid
    wait_until(
        lambda: owner_pids(journal_path) == [pid],
        15,
        what=lambda: f"no owner but {pid} (owners: {owner_pids(journal_path)})",
        interval=0.005,
    )
    journal.close()


@pytest.mark.timeout(180)
def test_threads_that_lose_their_owner_together_all_reconnect(journal_path: Path) -> None:
    """Six threads of one process call as one, right after its owner was SIGKILLed, five times:
    every call answers. Before, they shared the new owner's ready pipe unguarded: one thread
    closed it under another's read, which failed with EBADF (72 of 90 calls in one run)."""
    journal, _ = start_owner(journal_path)
    errors: list[str] = []
    try:
        for _ in range(5):
            pid = journal.stats()["pid"]
            os.kill(pid, signal.SIGKILL)
            wait_gone(pid, what=f"the killed owner {pid} to end")
            together = threading.Barrier(6)

            def call() -> None:
                together.wait()  # noqa: B023
                try:
                    journal.list_runs()
                except Exception as exc:
                    errors.append(repr(exc))

            threads = [threading.Thread(target=call) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        assert errors == []
    finally:
        journal.close()
