"""step.map on a real Dask LocalCluster of worker processes, with real SIGKILLs.

The journal is a real DuckDB file behind its owner process; the workers open it by its path.
Each test counts, from the items' own log lines, how often each item ran.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import _kill_owner
from tests.distributed.dask_helpers import busy_worker, lines, wait_lines

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
N = 24


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Path]:
    journal = tmp_path / "journal" / "journal.duckdb"
    yield tmp_path
    _kill_owner(journal)


def _start(tmp: Path, delay: float, marker: int | None = None) -> subprocess.Popen[str]:
    cmd = [sys.executable, str(HERE / "dask_flows.py"), str(tmp / "journal" / "journal.duckdb")]
    cmd += [str(tmp / "log.txt"), str(N), str(delay)]
    if marker is not None:
        cmd.append(str(marker))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    return subprocess.Popen(
        cmd,
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[str], limit: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=limit)
    finally:
        _killpg(proc)
    return proc.returncode, out, err


def _killpg(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _starts(tmp: Path) -> collections.Counter[int]:
    return collections.Counter(i for w, i, _ in lines(tmp) if w == "start")


EXPECTED = f"RESULT {sum(i * i for i in range(N))}"


def test_a_killed_worker_reruns_only_its_item_elsewhere(lab: Path) -> None:
    proc = _start(lab, delay=0.25)
    wait_lines(lab, "done", 6, proc)
    done = {i for w, i, _ in lines(lab) if w == "done"}
    victim = busy_worker(lab)
    os.kill(victim, signal.SIGKILL)
    rc, out, err = _finish(proc)
    assert rc == 0, err[-3000:]
    assert EXPECTED in out
    starts = _starts(lab)
    assert set(starts) == set(range(N))
    assert all(starts[i] == 1 for i in done), starts  # finished before the kill: never again
    assert sum(starts.values()) <= N + 1, starts  # one thread per worker: one item in flight
    assert victim in {pid for _, _, pid in lines(lab)}


def test_a_killed_orchestrator_reattaches_and_submits_only_unfinished_items(lab: Path) -> None:
    first = _start(lab, delay=0.2)
    wait_lines(lab, "done", 8, first)
    _killpg(first)  # the orchestrator and its whole LocalCluster
    first.wait(timeout=30)
    before = _starts(lab)
    done_before = {i for w, i, _ in lines(lab) if w == "done"}
    second = _start(lab, delay=0.2)
    rc, out, err = _finish(second)
    assert rc == 0, err[-3000:]
    assert EXPECTED in out
    starts = _starts(lab)
    assert set(starts) == set(range(N))
    again = {i for i in starts if starts[i] > before.get(i, 0) and i in before}
    # only items in flight at the kill (2 workers, 1 thread each) may run a second time; an
    # item whose done line was written may still be in flight if it was killed before its
    # completion reached the journal
    assert len(again) <= 2, (again, before)
    assert max(starts.values()) <= 2, starts
    assert len(again & done_before) <= 2
    assert sum(starts.values()) <= N + 2
    # the second orchestrator submitted only what the journal did not show finished
    replayed = re.search(r"(\d+) of (\d+) items replayed from the journal, (\d+) submitted", err)
    assert replayed, err[-3000:]
    n_replayed, total, submitted = map(int, replayed.groups())
    assert total == N and n_replayed + submitted == N
    assert n_replayed >= len(done_before) - 2 and submitted <= N - len(done_before) + 2


def test_a_marker_in_doubt_on_a_killed_worker_is_never_repeated(lab: Path) -> None:
    proc = _start(lab, delay=0.05, marker=3)
    wait_lines(lab, "effect", 1, proc)
    pid = next(p for w, i, p in lines(lab) if w == "effect" and i == 3)
    os.kill(pid, signal.SIGKILL)
    rc, _, err = _finish(proc)
    assert rc != 0
    assert "InDoubtError" in err or "in doubt" in err, err[-3000:]
    effects = [x for x in lines(lab) if x[0] == "effect"]
    assert len(effects) == 1, effects
    assert _starts(lab)[3] == 2  # Dask ran it again elsewhere; the marker stopped it
