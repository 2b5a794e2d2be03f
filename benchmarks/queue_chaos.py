"""The issue's full chaos bar for queued runs: 4 ``lil worker`` processes drain 1,000 queued
runs while 20+ of them are SIGKILLed at random (the whole fleet once), on a DuckDB journal and
on a throwaway PostgreSQL server; a counting server on 127.0.0.1 checks every step execution,
side effect and concurrency. The CI version (200 runs) is tests/queues/test_queue_chaos.py.

    python benchmarks/queue_chaos.py [--runs 1000] [--kills 24] [--seconds 0.02]

A backend passes only if the fleet was still draining at the last kill (all ``--kills`` of
them, the whole-fleet kill among them): a fleet that drains first proves less than the bar.
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--journal", choices=["duckdb", "postgres"], action="append")
    parser.add_argument("--seconds", type=float, default=0.02, help="each counted step's sleep")
    args = parser.parse_args()
    from letitloop.journal import open_journal

    server = open_server()
    try:
        for kind in args.journal or ["duckdb", "postgres"]:
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                if kind == "duckdb":
                    (work / ".letitloop").mkdir()
                    spec = str(work / ".letitloop" / "journal.duckdb")
                else:
                    spec = with_database(server.dsn, server.create_database())
                load = os.getloadavg()[0]
                r = chaos(
                    work, spec, open_journal(spec), runs=args.runs, kills=args.kills,
                    seconds=args.seconds,
                )  # fmt: skip
                r.pop("output")
                ok = (
                    r["left"] == 0
                    and r["completed"] == args.runs
                    and r["kills"] >= args.kills
                    and r["fleet_killed"]
                    and r["effects"] == args.runs
                    and not r["unexplained_reexecutions"]
                    and r["duplicate_effects"] == 0
                    and r["max_total"] <= 6
                    and r["max_per_pid"] <= 2
                )
                print(
                    f"{kind:8} {'PASS' if ok else 'FAIL'}: {r['completed']}/{args.runs} runs "
                    f"completed in {r['elapsed']:.1f} s through {r['kills']} SIGKILLs (the "
                    f"whole fleet once: {r['fleet_killed']}; the last at {r['last_kill']:.1f} s); "
                    f"{r['reexecutions']} steps ran again (each after its worker's kill: "
                    f"{not r['unexplained_reexecutions']}); duplicate side effects "
                    f"{r['duplicate_effects']}; at most {r['max_total']} at once (limit 6), "
                    f"{r['max_per_pid']} per worker (limit 2; {r['late_enters']} entries sent by "
                    f"killed workers, read after their death, not counted); load {load:.1f} "
                    f"before, {os.getloadavg()[0]:.1f} after",
                    flush=True,
                )
    finally:
        server.close()


if __name__ == "__main__":
    main()
