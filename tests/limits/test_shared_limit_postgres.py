"""The same limit shared on PostgreSQL: a Dask cluster's workers and another process.

A ``step.map`` on a ``DaskExecutor`` (two worker processes) makes one limited call per item
while another process's limited workflow waits for the same limit; that process is SIGKILLed
while it waits. The counting server sees at most the limit, the map finishes at the limit's
pace, and the killed waiter's share goes to the others (nothing of it stays reserved).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import child_env, wait_until
from tests.limits.counting_server import Counter

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
N = 14
BURST, RATE = 6, 54 / 60


@pytest.fixture
def counter() -> Iterator[Counter]:
    c = Counter()
    yield c
    c.close()


def _popen(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_dask_workers_and_a_killed_waiter_share_60_rpm_on_postgres(
    pg_dsn: str, counter: Counter
) -> None:
    env = child_env(pg_dsn)
    fan = _popen([str(HERE / "dask_limited.py"), pg_dsn, counter.url, str(N)], env)
    waiter = _popen([str(HERE / "limit_flows.py"), "pgw", counter.url, "50"], env)
    try:

        def dask_called() -> bool:
            assert fan.poll() is None, fan.communicate()[1][-3000:]
            return any("/dask/" in p for _, p in counter.hits)

        wait_until(dask_called, 90, what="a call from the Dask workers")
        time.sleep(4.0)  # both are waiting for the limit now
        os.killpg(waiter.pid, signal.SIGKILL)
        waiter.wait(timeout=30)
        killed_at = time.monotonic()
        out, err = fan.communicate(timeout=150)
        assert fan.returncode == 0, err[-3000:]
        assert f"RESULT {N}" in out
        end = time.monotonic()
    finally:
        for proc in (fan, waiter):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
    times = sorted(counter.times())
    span = end - times[0]
    assert counter.max_in_window(60) <= 60
    assert len(times) <= BURST + RATE * span + 2, (len(times), span)
    assert counter.max_in_window(10) <= BURST + RATE * 10 + 1
    dask_hits = [p for _, p in counter.hits if p.startswith("/dask/")]
    assert len(dask_hits) >= N  # every item called (a retried item may call twice)
    # after the kill, the map alone had the whole limit: its calls kept the limit's pace
    after = [t for t in times if t >= killed_at + 1]
    assert len(after) >= 0.7 * RATE * (end - killed_at - 1) - 1, (len(after), end - killed_at)
    # the database's buckets are in the journal: one row, shared by every process
    from letitloop.journal import open_journal

    buckets = open_journal(pg_dsn).capacity()
    assert [b["name"] for b in buckets] == ["test:shared-60"]
