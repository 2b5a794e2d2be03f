"""Point 14: `lil` where no journal exists says where it looked and creates nothing; `lil
journal schema` lists every table and view with its columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from letitloop import durable, step
from letitloop.journal.duckdb._client import open_journal

ROOT = Path(__file__).resolve().parents[2]


def lil(cwd: Path, *args: str, journal: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LIL_JOURNAL"}
    env["PYTHONPATH"] = str(ROOT)
    if journal is not None:
        env["LIL_JOURNAL"] = str(journal)
    return subprocess.run(
        [sys.executable, "-m", "letitloop", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_read_only_commands_in_a_folder_without_a_journal(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()  # the project root
    sub = project / "src"
    sub.mkdir()
    for args in (["runs", "list"], ["approvals", "list"], ["runs", "show", "x"]):
        result = lil(sub, *args)
        assert result.returncode == 1, result.stdout + result.stderr
        expected = project / ".letitloop" / "journal.duckdb"
        assert f"no journal at {expected}" in result.stderr
        assert "pyproject.toml" in result.stderr and "$LIL_JOURNAL" in result.stderr
        assert "Traceback" not in result.stderr
    assert sorted(p.name for p in project.iterdir()) == [".git", "src"]  # nothing created


def test_journal_schema_lists_every_table_with_its_columns(journal_path: Path) -> None:
    journal = open_journal(journal_path)

    @durable(journal=journal, name="s")
    def flow() -> int:
        return step("one", lambda: 1)

    flow()
    result = lil(journal_path.parent, "journal", "schema", "--json", journal=journal_path)
    assert result.returncode == 0, result.stderr
    tables = {t["name"]: t for t in json.loads(result.stdout)}
    assert {"runs", "steps", "events", "approvals", "proposals", "cache"} <= set(tables)
    steps = {c["name"]: c["type"] for c in tables["steps"]["columns"]}
    assert steps["run_id"] == "VARCHAR" and steps["position"] == "INTEGER"
    text = lil(journal_path.parent, "journal", "schema", journal=journal_path).stdout
    assert "runs (table)" in text and "run_id VARCHAR" in text
    helped = lil(journal_path.parent, "journal", "sql", "--help").stdout
    assert "lil journal schema" in " ".join(helped.split())
