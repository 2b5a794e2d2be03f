"""Clients never hang on a stopped owner (issue 14, point 5): real SIGSTOP of the real owner.

A person's command (``lil runs list``) waits ``LIL_READ_TIMEOUT`` (default 15 s) and then fails
naming the owner's pid and what to do; a workflow's own writes wait ``LIL_WRITE_TIMEOUT``
(default 120 s), carry on if the owner is resumed before that, and raise after it. On the old
client both waited forever.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.crash.crash_helpers import Worker
from tests.helpers import child_env, run_lil
from tests.trust.trust_helpers import start_owner


def _expected(n: int) -> int:
    acc = 1
    for i in range(n):
        acc = (acc * 7 + i) % 1_000_003
    return acc


@pytest.mark.timeout(120)
def test_lil_runs_list_fails_within_its_deadline_naming_a_stopped_owner(
    journal_path: Path,
) -> None:
    """Owner SIGSTOPped: ``lil runs list`` with LIL_READ_TIMEOUT=2 exits non-zero in < 12 s
    (old client: still waiting at 30 s), saying the owner's pid and how to resume or end it."""
    journal, pid = start_owner(journal_path)
    env = child_env(LIL_READ_TIMEOUT="2")
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        try:
            done = run_lil("runs", "list", "--journal", str(journal_path), env=env, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("lil runs list still waited for a stopped owner after 30 s")
        elapsed = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert done.returncode != 0
    assert elapsed < 12, elapsed
    text = done.stdout + done.stderr
    assert f"pid {pid}" in text and f"kill -CONT {pid}" in text, text
    assert "Traceback" not in text, text
    assert "LIL_READ_TIMEOUT" in text
    journal.close()


@pytest.mark.timeout(120)
def test_a_workflow_waits_for_a_briefly_stopped_owner_and_continues(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner is SIGSTOPped for 3 s mid-run (write limit 20 s): the workflow pauses, then
    finishes with the right result, every step executed exactly once."""
    monkeypatch.setenv("LIL_WRITE_TIMEOUT", "20")
    journal, pid = start_owner(journal_path)
    side = tmp_path / "side"
    w = Worker("steps_worker.py", journal_path, "pause", 40, 0.02, side, stderr_path=tmp_path / "e")
    try:
        assert w.wait_prefix("S 10", 30), w.diagnostics()
        os.kill(pid, signal.SIGSTOP)
        time.sleep(3)
        stopped_at = len(w.snapshot())
        os.kill(pid, signal.SIGCONT)
        assert w.wait_prefix("RESULT", 60), w.diagnostics()
        assert w.finish(30) == 0
    finally:
        os.kill(pid, signal.SIGCONT)
        w.kill()
    assert stopped_at < 40, "the owner's stop did not pause the run"
    assert f"RESULT {_expected(40)}" in w.snapshot()
    indices = [line.split()[0] for line in side.read_text().splitlines()]
    assert sorted(indices, key=int) == [str(i) for i in range(40)], "a step ran twice or never"
    assert journal.stats()["pid"] == pid
    journal.close()


@pytest.mark.timeout(120)
def test_a_workflow_write_raises_after_its_limit_on_a_stopped_owner(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner stays stopped: with LIL_WRITE_TIMEOUT=3 the run raises JournalUnavailableError
    naming the owner's pid within 15 s (the old client waited forever)."""
    monkeypatch.setenv("LIL_WRITE_TIMEOUT", "3")
    journal, pid = start_owner(journal_path)
    side = tmp_path / "side"
    w = Worker(
        "steps_worker.py", journal_path, "stuck", 500, 0.01, side, stderr_path=tmp_path / "e"
    )
    try:
        assert w.wait_prefix("S 5", 30), w.diagnostics()
        os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        line = w.wait_prefix("ERROR", 20)
        elapsed = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
        w.kill()
    assert line is not None, f"the workflow still waited after 20 s: {w.diagnostics()}"
    assert line.startswith("ERROR JournalUnavailableError") and f"pid {pid}" in line, line
    assert elapsed < 15, elapsed
    journal.close()


@pytest.mark.timeout(120)
def test_lil_journal_stop_fails_within_its_deadline_on_a_stopped_owner(
    journal_path: Path,
) -> None:
    """``lil journal stop`` on a SIGSTOPped owner: a clear error naming the pid in < 12 s (the
    old one waited forever for the owner's answer)."""
    journal, pid = start_owner(journal_path)
    env = child_env(LIL_READ_TIMEOUT="2")
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        try:
            done = run_lil("journal", "stop", "--journal", str(journal_path), env=env, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("lil journal stop still waited for a stopped owner after 30 s")
        elapsed = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    text = done.stdout + done.stderr
    assert done.returncode != 0 and elapsed < 12, (elapsed, text)
    assert f"kill -CONT {pid}" in text and "Traceback" not in text, text
    journal.close()
