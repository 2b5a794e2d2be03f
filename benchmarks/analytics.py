"""Analytics on a journal of 100,000+ step attempts: each recipe of docs/analytics.md under 1 s.

The journal is made of the made-up runs of ``tests/analytics/synthetic.py`` (1,000 runs of 100
steps over 30 days: retries, failures, resumed runs, cache hits, model costs), imported
through the journal's own batch import (``import_records``, what ``lil journal copy`` uses)
rather than 100,000 step calls. Each recipe then runs ``--repeat`` times through the real path
(the DuckDB owner's read-only SQL, or PostgreSQL's read-only transaction); the table gives the
median and the slowest, and the exit status is 1 if a median reaches the bar. ``lil report``'s
whole summary and the Parquet export are timed too (no bar).

    python benchmarks/analytics.py                  # DuckDB
    python benchmarks/analytics.py --postgres       # and PostgreSQL (a throwaway cluster)
    python benchmarks/analytics.py --runs 200 --repeat 3   # quick
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "analytics")]
os.environ.setdefault("LIL_READ_TIMEOUT", "600")  # folding a big import keeps the owner busy
os.environ.setdefault("LIL_OWNER_IDLE", "900")

import synthetic  # noqa: E402

from letitloop.journal import _analytics as analytics, open_journal  # noqa: E402

BAR_S = 1.0


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, slowest) seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), max(times)


def measure(name: str, journal: Any, shape: synthetic.Shape, repeat: int, scratch: Path) -> bool:
    t = time.perf_counter()
    synthetic.fill(journal, shape)
    built = time.perf_counter() - t
    (attempts,) = analytics.select(journal, "SELECT count(*) FROM step_facts").rows[0]
    (runs,) = analytics.select(journal, "SELECT count(*) FROM run_facts").rows[0]
    print(f"\n{name}: {attempts:,} step attempts in {runs:,} runs, built in {built:.0f} s")
    print(f"  {'recipe':<30} {'median':>9} {'slowest':>9}  rows")
    ok = True
    for recipe in analytics.RECIPES.values():
        rows = len(analytics.select(journal, recipe.sql).rows)
        median, worst = timed(lambda r=recipe: analytics.select(journal, r.sql), repeat)
        ok &= median < BAR_S
        flag = "" if median < BAR_S else f"  OVER the {BAR_S:.0f} s bar"
        print(f"  {recipe.name:<30} {median * 1000:>7.0f} ms {worst * 1000:>7.0f} ms  {rows}{flag}")
    median, worst = timed(lambda: analytics.summary(journal), repeat)
    print(f"  {'(lil report: whole summary)':<30} {median * 1000:>7.0f} ms {worst * 1000:>7.0f} ms")
    t = time.perf_counter()
    counts = analytics.export_parquet(journal, scratch / f"export-{name}")
    print(
        f"  export --parquet: {counts['steps']:,} steps + {counts['runs']:,} runs in "
        f"{time.perf_counter() - t:.1f} s"
    )
    return ok and attempts >= 100_000


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    from tests.pg_cluster import cluster

    with cluster() as pg:
        yield pg.database_dsn("lil_bench_analytics")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs of 100 steps (1000)")
    parser.add_argument("--repeat", type=int, default=7, help="calls per recipe (7)")
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL")
    args = parser.parse_args(argv)
    shape = synthetic.Shape(runs=args.runs, steps=100, days=30)
    scratch = Path(tempfile.mkdtemp(prefix="analytics-"))
    os.environ["LIL_KEY_DIR"] = str(scratch / "keys")
    path = scratch / "journal.duckdb"
    ok = True
    try:
        ok &= measure("DuckDB", open_journal(path), shape, args.repeat, scratch)
        if args.postgres:
            with postgres() as dsn:
                journal = open_journal(dsn)
                try:
                    ok &= measure("PostgreSQL", journal, shape, args.repeat, scratch)
                finally:
                    journal.close()
    finally:
        from letitloop.journal.duckdb._client import stop_owner

        with contextlib.suppress(Exception):
            stop_owner(path)
        shutil.rmtree(scratch, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.1f}; every median under {BAR_S:.0f} s: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
