"""The issue's full chaos bar for queued runs: 4 ``lil worker`` processes drain 1,000 queued
runs while 20+ of them are SIGKILLed at random (the whole fleet once), on a DuckDB journal and
on a throwaway PostgreSQL server; a counting server on 127.0.0.1 checks every step execution,
side effect and concurrency. The CI version (200 runs) is tests/queues/test_queue_chaos.py.

    python benchmarks/queue_chaos.py [--runs 1000] [--kills 24]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pg_cluster import open_server, with_database
from tests.queues.chaos import chaos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=24)
    args = parser.parse_args()
    from letitloop.journal import open_journal

    server = open_server()
    try:
        for kind in ("duckdb", "postgres"):
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                if kind == "duckdb":
                    (work / ".letitloop").mkdir()
                    spec = str(work / ".letitloop" / "journal.duckdb")
                else:
                    spec = with_database(server.dsn, server.create_database())
                r = chaos(work, spec, open_journal(spec), runs=args.runs, kills=args.kills)
                r.pop("output")
                ok = (
                    r["left"] == 0
                    and r["completed"] == args.runs
                    and not r["unexplained_reexecutions"]
                    and r["duplicate_effects"] == 0
                    and r["max_total"] <= 6
                    and r["max_per_pid"] <= 2
                )
                print(
                    f"{kind:8} {'PASS' if ok else 'FAIL'}: {r['completed']}/{args.runs} runs "
                    f"completed in {r['elapsed']:.1f} s through {r['kills']} SIGKILLs; "
                    f"{r['reexecutions']} steps ran again (each after its worker's kill: "
                    f"{not r['unexplained_reexecutions']}); duplicate side effects "
                    f"{r['duplicate_effects']}; at most {r['max_total']} at once (limit 6), "
                    f"{r['max_per_pid']} per worker (limit 2)",
                    flush=True,
                )
    finally:
        server.close()


if __name__ == "__main__":
    main()
