"""Claimed runs executed on a real Dask LocalCluster: ``lil worker --dask tcp://...`` against a
cluster the test starts (worker processes of their own), and the ``dask_execute`` plugin of
``Worker`` with the private cluster ``DaskExecutor`` starts (``letitloop.distributed``'s own).
Each step says which process ran it: the Dask workers, never the ``lil worker`` process, and
each run once, completed on a DuckDB journal."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.queues.chaos import ROOT

LIL = str(Path(sys.executable).with_name("lil"))
FLOW = """
import os
from letitloop import Queue, durable, step

QUEUE = Queue("dask")


@durable
def job(n):
    first = step("first", os.getpid)
    second = step("second", lambda v: (v, os.getpid()), n)
    return [first, second[1], n * 2]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Any]]:
    """A folder with the flow and a DuckDB journal; the Dask workers started from here find
    the flow (PYTHONPATH) and the journal (LIL_JOURNAL) as a ``lil worker`` would."""
    (tmp_path / "daskflow.py").write_text(textwrap.dedent(FLOW))
    (tmp_path / ".letitloop").mkdir()
    journal = tmp_path / ".letitloop" / "journal.duckdb"
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{ROOT}")
    monkeypatch.setenv("LIL_JOURNAL", str(journal))
    monkeypatch.syspath_prepend(str(tmp_path))
    from letitloop.journal import open_journal

    yield tmp_path, open_journal(journal)


def _enqueue(n: int) -> list[str]:
    import daskflow

    return [daskflow.QUEUE.enqueue(daskflow.job, i).run_id for i in range(n)]


def _check(journal: Any, runs: list[str], not_pid: int) -> set[int]:
    from letitloop.kernel import codec_for

    found = journal.results(runs)
    assert set(found) == set(runs)
    pids = set()
    codec = codec_for(journal)
    for run in runs:
        first, second, _double = codec.decode(*found[run], what="result")
        pids |= {first, second}
        item = journal.queue_item(run)
        assert (item.outcome, item.claims) == ("completed", 1)
    assert not_pid not in pids  # executed on the cluster's workers, not by the claimer
    return pids


@pytest.mark.timeout(240)
def test_lil_worker_dask_runs_claimed_runs_on_a_local_cluster(project: tuple[Path, Any]) -> None:
    from distributed import Client, LocalCluster

    folder, journal = project
    runs = _enqueue(4)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=":0",
    ) as cluster, Client(cluster) as client:  # fmt: skip
        workers = set(client.run(os.getpid).values())
        address = cluster.scheduler_address
        worker = subprocess.run(
            [LIL, "worker", "--queue", "dask", "--until-empty", "--dask", address],
            cwd=folder, env=os.environ.copy(), capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert worker.returncode == 0, worker.stderr
        pids = _check(journal, runs, not_pid=-1)
        assert pids <= workers, (pids, workers)  # every step ran in a Dask worker process
    assert "4 completed" in worker.stderr, worker.stderr


@pytest.mark.timeout(240)
def test_a_worker_with_the_dask_plugin_uses_a_private_local_cluster(
    project: tuple[Path, Any],
) -> None:
    from letitloop.distributed import dask_execute
    from letitloop.kernel import Worker, WorkerOptions

    _folder, journal = project
    runs = _enqueue(3)
    execute = dask_execute(None, journal)  # no address: DaskExecutor's own LocalCluster
    worker = Worker(journal, WorkerOptions(queues=("dask",), until_empty=True, quiet=True), execute)
    try:
        worker.run()
    finally:
        execute.close()
    assert worker.counts == {"completed": 3}
    _check(journal, runs, not_pid=os.getpid())
