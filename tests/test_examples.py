"""Every script in examples/ runs offline, and a second run is served from the journal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(script: Path, journal: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LIL_JOURNAL": str(journal)}
    out = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_research_pipeline_uses_every_policy(tmp_path: Path) -> None:
    from tests.conftest import _kill_owner

    journal = tmp_path / "journal.duckdb"
    script = ROOT / "examples" / "research_pipeline.py"
    try:
        first = _run(script, journal, "durable agents")
        assert "completed" in first and "model calls this process: 4" in first
        assert "search  attempt 1 completed" in first
        assert "draft   attempt 1 failed    transient" in first  # rate-limited, retried
        assert "draft   attempt 2 failed    invalid" in first  # rejected, then rewritten
        assert "draft   attempt 3 completed" in first
        assert "polish  attempt 1 completed miss" in first
        second = _run(script, journal, "durable agents")  # a finished run: its result
        assert "model calls this process: 0" in second
        third = _run(script, journal, "crash-proof agents")  # a new run: polish is not cached
        assert "polish  attempt 1 completed miss" in third
    finally:
        _kill_owner(journal)
