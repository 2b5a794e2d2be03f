"""Points 11 and 15: a script blocked in approval() says so at once; `lil runs resume` warns."""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest

from letitloop.journal.duckdb._client import open_journal

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def env(journal: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "LIL_JOURNAL": str(journal)}


def read_stderr_until(proc: subprocess.Popen[str], pattern: str, seconds: float) -> str:
    """What the process wrote to stderr until ``pattern`` appeared (or the deadline)."""
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    seen = ""
    deadline = time.monotonic() + seconds
    while not re.search(pattern, seen) and time.monotonic() < deadline:
        if sel.select(timeout=0.1):
            line = proc.stderr.readline()
            if not line:
                break
            seen += line
    return seen


def test_a_script_blocked_in_approval_says_so_on_stderr_at_once(journal_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "blocked_script.py")],
        env=env(journal_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = read_stderr_until(proc, r"lil approvals approve \w+", 30)
        [row] = open_journal(journal_path).approvals(status="pending")
        assert f"lil approvals approve {row.id}" in said, said
        assert f"lil approvals reject {row.id}" in said and "'publish'" in said
        assert proc.poll() is None  # still waiting: nothing decided it
        decided = subprocess.run(
            [sys.executable, "-m", "letitloop", "approvals", "approve", row.id],
            env=env(journal_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert decided.returncode == 0, decided.stderr
        out, _ = proc.communicate(timeout=60)
        assert out.strip() == "APPROVED"
    finally:
        proc.kill()
        proc.wait()


def test_splice_proposals_record_who_with_the_one_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 12 (identity): with $USER unset (a container, cron) proposals said ``unknown``."""
    from letitloop.journal._config import who
    from letitloop.journal._memory import MemoryJournal
    from letitloop.splice import propose_splice

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("USERNAME", raising=False)
    src = tmp_path / "mod.py"
    src.write_text("def f():\n    return 1\n")
    journal = MemoryJournal()
    p = propose_splice(src, "f", "def f():\n    return 2\n", reason="r", journal=journal)
    assert p.by == who() and not p.by.startswith("unknown")
