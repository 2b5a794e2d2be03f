"""Every Python block in docs/*.md and README.md runs, each in a fresh interpreter and journal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    pytest.param(block, id=f"{path.name}:{n}")
    for path in DOCS
    for n, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(), re.S))
]


def test_docs_have_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS)
def test_doc_example_runs(block: str, tmp_path: Path) -> None:
    journal = tmp_path / "journal.duckdb"
    script = tmp_path / "example.py"
    script.write_text(block)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LIL_JOURNAL": str(journal)}
    try:
        out = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
        )
        assert out.returncode == 0, out.stderr
    finally:
        from tests.conftest import _kill_owner

        _kill_owner(journal)
