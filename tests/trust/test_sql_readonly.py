"""Point 13 of issue 14: ``lil journal sql`` is truly read-only.

Against the real owner and its DuckDB file: before the fix ``EXPLAIN ANALYZE DELETE`` deleted
every run, ``COPY ... TO`` wrote files and ``read_text()`` read any file the user can (the
journal's key among them), and a long result was cut silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from letitloop import durable, step
from letitloop.errors import ConfigError
from tests.helpers import invoke_lil


def _sql(path: Path, query: str, *flags: str) -> Any:
    return invoke_lil("journal", "sql", query, *flags, journal=path)


@pytest.fixture
def runs(journal_path: Path, journal: Any) -> int:
    @durable(journal=journal, name="w")
    def w(i: int) -> int:
        return step("one", lambda: i)

    for i in range(3):
        w(i)
    return 3


def _count(journal: Any) -> int:
    return len(journal.list_runs())


@pytest.mark.parametrize(
    "query",
    [
        "EXPLAIN ANALYZE DELETE FROM runs",
        "EXPLAIN ANALYZE UPDATE runs SET status = 'failed'",
        "DELETE FROM runs",
        "SELECT 1; DELETE FROM runs",
        "PRAGMA table_info('runs')",
        "CALL pragma_version()",
        "SET threads = 1",
        "CREATE TABLE x AS SELECT * FROM runs",
    ],
)
def test_anything_but_one_select_is_refused_and_changes_nothing(
    journal_path: Path, journal: Any, runs: int, query: str
) -> None:
    with pytest.raises(ConfigError, match="only a single SELECT"):
        journal.sql(query)
    res = _sql(journal_path, query)
    assert res.exit_code != 0 and "only a single SELECT" in res.output
    assert "Traceback" not in res.output
    assert _count(journal) == runs
    statuses = journal.sql("SELECT DISTINCT status FROM runs")["rows"]
    assert statuses == [["completed"]]


def test_file_system_is_out_of_reach(
    journal_path: Path, journal: Any, runs: int, tmp_path: Path
) -> None:
    secret = tmp_path / "journal.key"
    secret.write_text("0123456789abcdef-the-key")
    target = tmp_path / "stolen.csv"
    for query in (
        f"SELECT * FROM read_text('{secret}')",
        f"SELECT content FROM read_blob('{secret}')",
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM glob('{tmp_path}/*')",
    ):
        with pytest.raises(ConfigError) as info:
            journal.sql(query)
        assert "the-key" not in str(info.value)
        res = _sql(journal_path, query)
        assert res.exit_code != 0 and "the-key" not in res.output
    with pytest.raises(ConfigError):
        journal.sql(f"COPY runs TO '{target}'")
    assert not target.exists()
    assert _count(journal) == runs


def test_a_plain_select_works_and_a_long_result_says_it_was_cut(
    journal_path: Path, journal: Any, runs: int
) -> None:
    res = _sql(journal_path, "SELECT count(*) AS n FROM runs JOIN steps USING (run_id)", "--json")
    assert json.loads(res.output)["rows"] == [[3]]
    assert json.loads(res.output)["truncated"] is False
    big = journal.sql("SELECT i FROM range(25000) t(i)")
    assert big["truncated"] is True and len(big["rows"]) == 10_000
    res = _sql(journal_path, "SELECT i FROM range(25000) t(i)")
    assert res.exit_code == 0 and "truncated" in res.output
    res = _sql(journal_path, "SELECT * FROM not_a_table")
    assert res.exit_code != 0 and "Traceback" not in res.output
