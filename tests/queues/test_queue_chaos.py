"""The issue's bar for queued runs, on real ``lil worker`` processes, on a DuckDB journal (one
machine: the owner is the queue) and on PostgreSQL: workers SIGKILLed at random while they drain
the queue (and the whole fleet once), a SIGTERM drain under load, a SIGSTOPped worker fenced.

The CI size is 200 runs and 20 kills; ``benchmarks/queue_chaos.py`` runs the same with 1,000.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.queues.chaos import chaos


@pytest.fixture(params=["duckdb", "postgres"])
def journal_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "duckdb":
        (tmp_path / ".letitloop").mkdir()
        return str(tmp_path / ".letitloop" / "journal.duckdb")
    return request.getfixturevalue("pg_dsn")


@pytest.mark.timeout(600)
def test_workers_killed_at_random_lose_nothing(journal_spec: str, tmp_path: Path) -> None:
    from letitloop.journal import open_journal

    journal = open_journal(journal_spec)
    r = chaos(tmp_path, journal_spec, journal, runs=200, kills=20)
    out = r.pop("output")
    assert r["left"] == 0 and r["completed"] == 200, (r, out())
    assert r["kills"] >= 20, r
    assert r["unexplained_reexecutions"] == [], r  # a step re-ran only when its worker died
    assert r["duplicate_effects"] == 0 and r["effects"] == 200, r
    assert r["max_total"] <= 6 and r["max_per_pid"] <= 2, r  # concurrency=6, per_worker=2
    print(
        f"\n{journal_spec.split(':')[0]}: 200 runs, {r['kills']} kills, {r['elapsed']:.1f} s, "
        f"{r['reexecutions']} steps run again (each after its worker's kill), "
        f"max {r['max_total']} at once, {r['max_per_pid']} per worker"
    )
