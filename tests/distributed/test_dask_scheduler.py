"""A scheduler killed mid-map: the orchestrator's map fails with a clear error instead of
hanging, and once a scheduler runs again, calling the workflow again re-attaches."""

from __future__ import annotations

import collections
import re
import time
from pathlib import Path

from tests.conftest import _kill_owner
from tests.distributed.dask_helpers import lines, wait_lines
from tests.distributed.test_dask_postgres import Cluster, _run, start_cluster

N = 24
EXPECTED = f"RESULT {sum(i * i for i in range(N))}"


def test_a_killed_scheduler_stops_the_map_and_a_new_one_resumes_it(tmp_path: Path) -> None:
    journal = str(tmp_path / "journal" / "journal.duckdb")
    cluster = start_cluster(tmp_path / "c1")
    second: Cluster | None = None
    try:
        first = _run(tmp_path, journal, cluster.address, delay=0.2)
        wait_lines(tmp_path, "done", 6, first, 120)
        cluster.stop()  # scheduler and workers gone, as when the cluster's host dies
        t = time.monotonic()
        out, err = first.communicate(timeout=120)
        assert time.monotonic() - t < 90
        assert first.returncode != 0
        assert "MapItemError" in err or "scheduler" in err.lower(), err[-2000:]
        done_before = {i for w, i, _ in lines(tmp_path) if w == "done"}

        second = start_cluster(tmp_path / "c2")
        again = _run(tmp_path, journal, second.address, delay=0.2)
        out, err = again.communicate(timeout=180)
        assert again.returncode == 0, err[-3000:]
        assert EXPECTED in out
        starts = collections.Counter(i for w, i, _ in lines(tmp_path) if w == "start")
        assert set(starts) == set(range(N)) and sum(starts.values()) <= N + 2, starts
        assert len([i for i in done_before if starts[i] > 1]) <= 2
        assert re.search(r"\d+ of 24 items replayed from the journal", err), err[-2000:]
    finally:
        cluster.stop()
        if second is not None:
            second.stop()
        _kill_owner(Path(journal))
