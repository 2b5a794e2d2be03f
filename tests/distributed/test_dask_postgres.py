"""step.map across "machines": a Dask scheduler and workers in processes of their own, each with
its own working directory, home and key directory, sharing nothing but the PostgreSQL journal.

The workers are started with Dask's own `dask worker` command and are given no letitloop
setting at all: the journal URL travels with each item.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.distributed.dask_helpers import busy_worker, lines, wait_lines

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
N = 24
EXPECTED = f"RESULT {sum(i * i for i in range(N))}"


@dataclass
class Cluster:
    address: str
    scheduler: subprocess.Popen[str]
    workers: list[subprocess.Popen[str]]
    homes: list[Path]

    def stop(self) -> None:
        """SIGKILL the scheduler and the workers (each its own process group)."""
        for proc in [*self.workers, self.scheduler]:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)


def _machine_env(home: Path) -> dict[str, str]:
    """What a fresh machine's shell has: no letitloop setting, a home and temp dir of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LIL_", "PYTHONPATH"))}
    return env | {"HOME": str(home), "TMPDIR": str(home / "tmp"), "LIL_KEY_DIR": str(home / "k")}


def start_cluster(root: Path) -> Cluster:
    """A scheduler and two worker "hosts", each a process group with a home of its own."""
    dask = str(Path(sys.executable).with_name("dask"))
    sched_home = root / "scheduler-host"
    (sched_home / "tmp").mkdir(parents=True)
    scheduler = subprocess.Popen(
        [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0"],
        cwd=sched_home,
        env=_machine_env(sched_home),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    address = ""
    assert scheduler.stderr is not None
    deadline = time.monotonic() + 60
    while not address and time.monotonic() < deadline:
        line = scheduler.stderr.readline()
        if match := re.search(r"Scheduler at:\s+(tcp://\S+)", line):
            address = match.group(1)
    assert address, "the scheduler did not start"
    workers, homes = [], []
    for name in ("host-a", "host-b"):
        home = root / name
        (home / "tmp").mkdir(parents=True)
        homes.append(home)
        workers.append(
            subprocess.Popen(
                [
                    dask,
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--nworkers",
                    "1",
                    "--name",
                    name,
                    "--local-directory",
                    str(home / "dask"),
                ],
                cwd=home,
                env=_machine_env(home),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        )
    return Cluster(address, scheduler, workers, homes)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    started = start_cluster(tmp_path)
    yield started
    started.stop()


def _run(tmp: Path, journal: str, address: str, delay: float) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LIL_TEST_SCHEDULER": address}
    return subprocess.Popen(
        [
            sys.executable,
            str(HERE / "dask_flows.py"),
            journal,
            str(tmp / "log.txt"),
            str(N),
            str(delay),
        ],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_workers_need_only_the_journal_url(cluster: Cluster, pg_dsn: str, tmp_path: Path) -> None:
    proc = _run(tmp_path, pg_dsn, cluster.address, delay=0.02)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    assert EXPECTED in out
    pids = {pid for _, _, pid in lines(tmp_path)}
    assert proc.pid not in pids and len(pids) == 2  # every item ran on the two worker hosts

    from letitloop.journal import open_journal

    journal = open_journal(pg_dsn)
    children = journal.list_runs(workflow="dask_fan.square", limit=1000)
    assert len(children) == N and {c.status for c in children} == {"completed"}
    # the "machines" share no file: nothing of letitloop's was written in their homes
    for home in cluster.homes:
        written = [p for p in home.rglob("*") if "letitloop" in p.name or p.suffix == ".duckdb"]
        assert not written, written


def test_worker_and_orchestrator_killed_on_postgres(
    cluster: Cluster, pg_dsn: str, tmp_path: Path
) -> None:
    first = _run(tmp_path, pg_dsn, cluster.address, delay=0.2)
    wait_lines(tmp_path, "done", 5, first, 120)
    os.kill(busy_worker(tmp_path), signal.SIGKILL)  # mid-item: its nanny starts a new one
    wait_lines(tmp_path, "done", 10, first, 120)
    os.killpg(first.pid, signal.SIGKILL)  # then the orchestrator, mid-map
    first.wait(timeout=30)
    done_before = {i for w, i, _ in lines(tmp_path) if w == "done"}
    second = _run(tmp_path, pg_dsn, cluster.address, delay=0.2)
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err[-3000:]
    assert EXPECTED in out
    starts = collections.Counter(i for w, i, _ in lines(tmp_path) if w == "start")
    assert set(starts) == set(range(N))
    # at most the items in flight at each kill ran twice: 1 (the worker) + 2 (the orchestrator:
    # one per worker thread; the killed orchestrator's running tasks may finish on their own)
    assert sum(starts.values()) <= N + 3, starts
    assert max(starts.values()) <= 3
    rerun_done = [i for i in done_before if starts[i] > 1]
    assert len(rerun_done) <= 3, (rerun_done, starts)
    assert re.search(r"\d+ of 24 items replayed from the journal", err), err[-2000:]
