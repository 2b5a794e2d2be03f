"""A durable fan-out on a real Dask cluster, run as a script by the kill tests.

    python dask_flows.py JOURNAL LOG N DELAY [MARKER_ITEM]

JOURNAL is a DuckDB path or a postgresql:// URL; with LIL_TEST_SCHEDULER set, the items go to
that scheduler's workers, else to a LocalCluster of 2 worker processes started here.

Each item appends ``start i pid`` / ``done i pid`` (and ``effect i pid`` inside its marker) to
LOG, so the test can tell which process ran what, and kill a worker or this orchestrator.
"""

from __future__ import annotations

import logging
import os
import sys
import time

from letitloop import atomic_marker, durable, step
from letitloop.distributed import DaskExecutor

LOG = ""
DELAY = 0.0
MARKER_ITEM = -1


def _note(line: str) -> None:
    with open(LOG, "a") as f:
        f.write(f"{line} {os.getpid()}\n")


def work(i: int) -> int:
    _note(f"start {i}")
    time.sleep(DELAY)
    if i == MARKER_ITEM:
        with atomic_marker("send") as should_execute:
            if should_execute:
                _note(f"effect {i}")
                time.sleep(60)  # the test kills this worker here
    _note(f"done {i}")
    return i * i


def main() -> None:
    global LOG, DELAY, MARKER_ITEM
    journal, LOG, n, DELAY = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    MARKER_ITEM = int(sys.argv[5]) if len(sys.argv) > 5 else -1

    address = os.environ.get("LIL_TEST_SCHEDULER")  # a running scheduler, else a LocalCluster

    @durable(journal=journal, name="dask_fan")
    def fan(n: int) -> int:
        cluster = DaskExecutor(address) if address else DaskExecutor(n_workers=2)
        with cluster as ex:
            squares = step.map("square", work, range(n), on=ex)
        return step("total", sum, squares)

    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    print("orchestrator", os.getpid(), flush=True)
    print("RESULT", fan(n), flush=True)


if __name__ == "__main__":
    main()
