"""Point 14: `lil` where no journal exists says where it looked and creates nothing; `lil
journal schema` lists every table and view with its columns."""

from __future__ import annotations

import json
from pathlib import Path

from letitloop import durable, step
from letitloop.journal.duckdb._client import open_journal
from tests.helpers import run_lil


def test_read_only_commands_in_a_folder_without_a_journal(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()  # the project root
    sub = project / "src"
    sub.mkdir()
    for args in (["runs", "list"], ["approvals", "list"], ["runs", "show", "x"]):
        result = run_lil(*args, cwd=sub, timeout=60)
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
    result = run_lil(
        "journal", "schema", "--json", journal=journal_path, cwd=journal_path.parent, timeout=60
    )
    assert result.returncode == 0, result.stderr
    tables = {t["name"]: t for t in json.loads(result.stdout)}
    assert {"runs", "steps", "events", "approvals", "proposals", "cache"} <= set(tables)
    steps = {c["name"]: c["type"] for c in tables["steps"]["columns"]}
    assert steps["run_id"] == "VARCHAR" and steps["position"] == "INTEGER"
    text = run_lil(
        "journal", "schema", journal=journal_path, cwd=journal_path.parent, timeout=60
    ).stdout
    assert "runs (table)" in text and "run_id VARCHAR" in text
    helped = run_lil("journal", "sql", "--help", cwd=journal_path.parent, timeout=60).stdout
    assert "lil journal schema" in " ".join(helped.split())
