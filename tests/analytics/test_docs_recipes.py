"""Every SQL block of docs/analytics.md runs on the DuckDB journal, on PostgreSQL and on the
Parquet export, with the same answers on all three; the recipe blocks are the recipes
``lil report`` runs, word for word."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
import synthetic

from letitloop.journal import _analytics as analytics, open_journal

DOC = Path(__file__).resolve().parents[2] / "docs" / "analytics.md"
BLOCKS = re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.S)


def plain(rows: Any) -> list[tuple[Any, ...]]:
    def one(v: Any) -> Any:
        if isinstance(v, (float, Decimal)):
            return round(float(v), 9)
        if isinstance(v, date):
            return v.isoformat()
        return v

    return [tuple(one(v) for v in row) for row in rows]


def words(sql: str) -> str:
    body = "\n".join(line for line in sql.splitlines() if not line.startswith("--"))
    return " ".join(body.split())


def test_the_page_has_the_four_recipes_of_the_issue() -> None:
    named = {m for b in BLOCKS for m in re.findall(r"-- recipe: (\w+)", b)}
    assert {"cost_per_model_per_day", "latency_per_step", "failure_rates", "cache_savings"} <= named
    for block in BLOCKS:
        for name in re.findall(r"-- recipe: (\w+)", block):
            assert words(block) == words(analytics.RECIPES[name].sql), name


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[list[tuple[Any, ...]]]]:
    """Each block's answer on each of the three (one journal of each, filled once)."""
    from tests.conftest import _kill_owner

    base = tmp_path_factory.mktemp("docs-recipes")
    path = base / "journal.duckdb"
    duck = open_journal(path)
    synthetic.fill(duck)
    try:
        out: dict[str, list[list[tuple[Any, ...]]]] = {"duckdb": [], "parquet": []}
        for block in BLOCKS:
            out["duckdb"].append(plain(analytics.select(duck, block).rows))
        analytics.export_parquet(duck, base / "export")
        local = duckdb.connect()
        for stem, view in (("steps", "step_facts"), ("runs", "run_facts")):
            where = base / "export" / f"{stem}.parquet"
            local.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{where}')")
        for block in BLOCKS:
            out["parquet"].append(plain(local.execute(block).fetchall()))
        return out
    finally:
        _kill_owner(path)


def test_every_block_answers_the_same_on_duckdb_and_parquet(answers: Any) -> None:
    assert len(BLOCKS) >= 6
    for n, (journal, files) in enumerate(zip(answers["duckdb"], answers["parquet"], strict=True)):
        assert journal and journal == files, BLOCKS[n]


def test_every_block_answers_the_same_on_postgres(answers: Any, pg_dsn: str) -> None:
    journal = open_journal(pg_dsn)
    synthetic.fill(journal)
    for n, block in enumerate(BLOCKS):
        assert plain(analytics.select(journal, block).rows) == answers["duckdb"][n], block
