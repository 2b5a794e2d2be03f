"""A ``lil worker`` on PostgreSQL executes each run in hand on a connection of its own: two runs
at once on one shared connection serialized every commit (``benchmarks/queues.py``: 4 workers
of 4 runs went from 100-120 to about 200 runs/s with a connection per run)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from letitloop.journal import open_journal

ROOT = Path(__file__).resolve().parents[2]
LIL = str(Path(sys.executable).with_name("lil"))

FLOW = """
import os
import time
from pathlib import Path

from letitloop import Queue, durable, step
from letitloop.kernel import current_run

QUEUE = Queue("slots")


@durable
def job(n):
    run = current_run.get()
    here = Path(os.environ["SLOTS_DIR"])
    (here / str(n)).write_text(run.journal.session)  # the PostgreSQL session it runs on
    deadline = time.monotonic() + 60
    while len(list(here.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # both runs in hand at once
    return step("double", lambda: n * 2)
"""


@pytest.mark.timeout(180)
def test_two_runs_in_hand_execute_on_two_connections(pg_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "slotflow.py").write_text(textwrap.dedent(FLOW))
    seen = tmp_path / "seen"
    seen.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "LIL_JOURNAL": pg_dsn,
        "SLOTS_DIR": str(seen),
    }
    code = "import slotflow\nfor n in (1, 2):\n    slotflow.QUEUE.enqueue(slotflow.job, n)\n"
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True, timeout=60)
    worker = [LIL, "worker", "--queue", "slots", "--concurrency", "2", "--until-empty"]
    done = subprocess.run(worker, cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    sessions = {p.name: p.read_text() for p in seen.iterdir()}
    assert sorted(sessions) == ["1", "2"]
    assert sessions["1"] != sessions["2"], sessions  # one connection each, not one shared
    journal = open_journal(pg_dsn)
    items = journal.queue_items(queue="slots")
    assert sorted(i.outcome or "" for i in items) == ["completed", "completed"]
    results = journal.results([i.run_id for i in items]).values()
    assert sorted(results) == [("json", b"2"), ("json", b"4")]
