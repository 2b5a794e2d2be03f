"""Workers for the shared-limit tests: each calls a counting HTTP server from limited steps.

Run as ``python limit_flows.py WORKER URL STEPS``; the journal comes from ``LIL_JOURNAL`` (a
DuckDB file or a PostgreSQL URL). Each step is one request, tagged with the worker's name.
"""

from __future__ import annotations

import sys
import urllib.request

from letitloop import durable, step
from letitloop.kernel._limits import Limit

SHARED = Limit("test:shared-60", rpm=60)


def hit(url: str, worker: str, i: int) -> int:
    req = urllib.request.Request(f"{url}/{worker}/{i}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return int(resp.status)


@durable(run_id="limits-{worker}")
def worker(worker: str, url: str, steps: int) -> int:
    done = 0
    for i in range(steps):
        done += step(f"call-{i}", hit, url, worker, i, limit="test:shared-60") == 200
    return done


def item(arg: tuple[int, str]) -> int:
    """One ``step.map`` item on a Dask worker: one limited call."""
    i, url = arg
    return step("call", hit, url, "dask", i, limit=SHARED)


if __name__ == "__main__":
    print("RESULT", worker(sys.argv[1], sys.argv[2], int(sys.argv[3])), flush=True)
