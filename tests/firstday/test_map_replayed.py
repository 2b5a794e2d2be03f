"""Issue 29, point 4: a resumed `step.map` says how many items came back from the journal, on
stderr, with no logging configured (docs/distributed.md promises that line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import _kill_owner

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import os
from letitloop import durable, step

def double(x: int) -> int:
    if x >= 6 and os.environ.get("BREAK"):
        raise ValueError(f"item {x} breaks")
    return 2 * x

@durable(run_id="fan")
def fan() -> list[int]:
    return step.map("double", double, list(range(10)))

if __name__ == "__main__":
    print(fan())
"""


def test_a_resumed_map_says_how_many_items_replayed(tmp_path: Path) -> None:
    journal = tmp_path / "journal.duckdb"
    (tmp_path / "fan.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LIL_JOURNAL": str(journal)}

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "fan.py"],
            cwd=tmp_path,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )

    try:
        first = run(BREAK="1")
        assert first.returncode != 0 and "items replayed" not in first.stderr, first.stderr
        second = run()
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == str([2 * x for x in range(10)])
        assert (
            "letitloop: step.map 'double' of run fan.fan:fan: 6 of 10 items replayed from the "
            "journal, 4 submitted" in second.stderr
        ), second.stderr
    finally:
        _kill_owner(journal)
