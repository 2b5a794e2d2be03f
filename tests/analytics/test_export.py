"""``lil journal export --parquet DIR``: the two views as Parquet files that a real reader
(DuckDB, in this process) reads back with the same rows, types and sums, on both backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import synthetic

from letitloop.journal import _analytics as analytics
from tests.helpers import run_lil


def location(journal: Any) -> str:
    return str(journal.location)


def read_back(path: Path, sql: str) -> tuple[Any, ...]:
    row = duckdb.connect().execute(sql.replace("FILE", f"'{path}'")).fetchone()
    assert row is not None
    return tuple(row)


def test_export_round_trips_rows_types_and_sums(filled: tuple[Any, Any], tmp_path: Path) -> None:
    journal, _ = filled
    out = run_lil(
        "journal",
        "export",
        "--parquet",
        str(tmp_path / "x"),
        "--json",
        "--journal",
        location(journal),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    steps, runs = tmp_path / "x" / "steps.parquet", tmp_path / "x" / "runs.parquet"
    assert answer["files"] == {"steps": str(steps), "runs": str(runs)}
    want = analytics.select(
        journal,
        "SELECT count(*), sum(cost_usd), count(*) FILTER (WHERE replayed), "
        "count(*) FILTER (WHERE status = 'failed'), sum(tokens_in) FROM step_facts",
    ).rows[0]
    got = read_back(
        steps,
        "SELECT count(*), sum(cost_usd), count(*) FILTER (WHERE replayed), "
        "count(*) FILTER (WHERE status = 'failed'), sum(tokens_in) FROM FILE",
    )
    assert got[0] == want[0] == answer["rows"]["steps"] > 300
    assert abs(got[1] - want[1]) < 1e-9 and got[2:] == tuple(want[2:])
    (n_runs,) = analytics.select(journal, "SELECT count(*) FROM run_facts").rows[0]
    assert read_back(runs, "SELECT count(*), count(DISTINCT run_id) FROM FILE") == (n_runs,) * 2
    types = duckdb.connect().execute(f"DESCRIBE SELECT * FROM '{steps}'").fetchall()
    assert [(name, kind) for name, kind, *_ in types][:3] == [
        ("run_id", "VARCHAR"),
        ("workflow", "VARCHAR"),
        ("name", "VARCHAR"),
    ]
    kinds = {name: kind for name, kind, *_ in types}
    assert kinds["started"] == "TIMESTAMP WITH TIME ZONE" and kinds["cached"] == "BOOLEAN"
    # the same first rows, value for value (times compared as instants)
    first = analytics.select(
        journal,
        "SELECT run_id, position, attempt, epoch_ms(started) FROM step_facts "
        "ORDER BY run_id, epoch, position, attempt LIMIT 5"
        if "duckdb" in type(journal).__module__
        else "SELECT run_id, position, attempt, "
        "CAST(round(extract(epoch FROM started) * 1000) AS bigint) FROM step_facts "
        "ORDER BY run_id, epoch, position, attempt LIMIT 5",
    ).rows
    again = (
        duckdb.connect()
        .execute(
            f"SELECT run_id, position, attempt, epoch_ms(started) FROM '{steps}' "
            "ORDER BY run_id, epoch, position, attempt LIMIT 5"
        )
        .fetchall()
    )
    assert [tuple(r) for r in again] == [tuple(r) for r in first]


def test_export_since_keeps_only_the_later_rows(filled: tuple[Any, Any], tmp_path: Path) -> None:
    journal, records = filled
    out = run_lil(
        "journal",
        "export",
        "--parquet",
        str(tmp_path),
        "--since",
        "2026-11-05",
        "--journal",
        location(journal),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    cut = analytics.parse_since("2026-11-05")
    assert cut is not None
    want = sum(1 for r in records if r["k"] == "step" and r["ts"] >= cut)
    got = read_back(tmp_path / "steps.parquet", "SELECT count(*), min(epoch(started)) FROM FILE")
    assert got[0] == want and 0 < want < 300 and got[1] >= cut
    assert f"steps.parquet: {want} rows" in out.stdout


def test_export_pages_through_a_journal_larger_than_the_owner_answers(
    journal: Any, tmp_path: Path
) -> None:
    """More rows than one owner answer holds (10,000): the pages join without gap or overlap."""
    synthetic.fill(journal, synthetic.Shape(runs=220, steps=50, days=10))
    (n,) = analytics.select(journal, "SELECT count(*) FROM step_facts").rows[0]
    assert n > 10_000
    counts = analytics.export_parquet(journal, tmp_path / "out")
    assert counts == {"steps": n, "runs": 220}
    keys = "count(DISTINCT (run_id, epoch, position, attempt))"
    got = read_back(tmp_path / "out" / "steps.parquet", f"SELECT count(*), {keys} FROM FILE")
    assert got == (n, n)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["runs.parquet", "steps.parquet"]


def test_export_into_a_file_path_says_so(journal_path: Path, tmp_path: Path) -> None:
    from letitloop.journal import open_journal

    synthetic.fill(open_journal(journal_path), synthetic.Shape(runs=2))
    (tmp_path / "taken").write_text("x")
    out = run_lil(
        "journal",
        "export",
        "--parquet",
        str(tmp_path / "taken"),
        "--journal",
        str(journal_path),
        timeout=300,
    )
    assert out.returncode != 0 and "taken" in out.stderr
