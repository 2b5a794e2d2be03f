"""A process SIGKILLed while it waits out a backoff resumes the remaining wait, not a new one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).parent / "workers" / "backoff_worker.py"


def _launch(journal: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(journal)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _line(proc: subprocess.Popen[str], prefix: str) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"worker ended without a {prefix!r} line (exit {proc.wait()})")


@pytest.mark.timeout(60)
def test_sigkill_during_backoff_resumes_the_remaining_wait(journal_path: Path) -> None:
    first = _launch(journal_path)
    try:
        failed_at = float(_line(first, "ATTEMPT 1").split()[2])
        time.sleep(1.2)  # well inside the 2 s backoff
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        killed_at = time.time()
        second = _launch(journal_path)
        second_at = float(_line(second, "ATTEMPT 2").split()[2])
        assert _line(second, "RESULT") == "RESULT answer"
        second.wait(10)
    finally:
        for proc in (first, locals().get("second")):
            if proc is not None and proc.poll() is None:
                proc.kill()
    retry_at = failed_at + 2.0  # as journaled by the first process
    assert second_at >= retry_at - 0.05, "the wait was cut short"
    # a fresh 2 s backoff would start attempt 2 no earlier than killed_at + 2
    assert second_at < killed_at + 1.9, (
        f"attempt 2 started {second_at - killed_at:.2f} s after the kill: the wait restarted"
    )
