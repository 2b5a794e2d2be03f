"""The tests' own helpers (``tests/helpers.py``), checked on real processes: a wrong "it is
dead" answer makes a chaos test race the very process it killed (a full CI run failed that way
once)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb

from tests.helpers import pid_alive, wait_gone, wait_until

# The leader thread ends with the raw exit(2) system call (that thread only), as a SIGKILLed
# leader does first, while another thread still runs and the DuckDB file stays open and locked.
LEADER_EXITS_FIRST = r"""
import ctypes, os, sys, threading, time
import duckdb

def end_later():
    time.sleep(float(sys.argv[2]))
    os._exit(0)  # every thread, DuckDB's too: the process is gone

db = duckdb.connect(sys.argv[1])
threading.Thread(target=end_later).start()
print("ready", flush=True)
ctypes.CDLL(None).syscall(60, 0)
"""


def test_a_process_whose_leader_exited_is_alive_while_another_thread_holds_its_locks(
    tmp_path: Path,
) -> None:
    path = tmp_path / "held.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-c", LEADER_EXITS_FIRST, str(path), "1.5"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        wait_until(lambda: _state(proc.pid) == "Z", 5, what="the leader thread to end")
        assert pid_alive(proc.pid)  # the leader is a zombie; its other thread is not
        try:
            duckdb.connect(str(path), read_only=True).close()
        except duckdb.IOException as exc:
            assert "lock" in str(exc) and str(proc.pid) in str(exc)
        else:
            raise AssertionError("the file opened while the living thread held its lock")
        wait_gone(proc.pid, what="the other thread to end")
        duckdb.connect(str(path), read_only=True).close()  # dead means its locks are free
    finally:
        proc.kill()
        proc.wait()
    assert not pid_alive(proc.pid)  # reaped: gone


def test_a_zombie_child_is_not_alive(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    wait_until(lambda: _state(proc.pid) == "Z", 10, what="the child to exit")
    assert not pid_alive(proc.pid)  # exited, not reaped yet
    proc.wait()


def _state(pid: int) -> str:
    """The state letter of process ``pid``'s leader thread."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
