"""Chaos on PostgreSQL with real processes: the server crashed under writers.

``test_server_restarted_under_four_writers_loses_no_acknowledged_step``: four writer processes
(``tests/crash/workers/writer_worker.py``) run 200-step workflows while the server is crashed and
restarted with ``pg_ctl restart -m immediate``: the writers finish by themselves and every step
they saw acknowledged is in the journal, once. (SIGKILLed workflows on PostgreSQL: the backend
parameter of ``tests/crash/test_kill_chaos.py``.)
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from letitloop.journal.postgres._journal import PgJournal
from tests.crash.crash_helpers import WRITER_STEPS, Worker, kill_all, writer_expected


@pytest.mark.timeout(300)
def test_server_restarted_under_four_writers_loses_no_acknowledged_step(
    pg_server: Any, pg_dsn: str, tmp_path: Path
) -> None:
    stop = tmp_path / "stop"
    writers = [
        Worker(
            "writer_worker.py", pg_dsn, wid, stop, WRITER_STEPS, stderr_path=tmp_path / f"{wid}.err"
        )
        for wid in range(4)
    ]
    restarts = 0
    try:
        for w in writers:
            assert w.wait_prefix("READY", 60), w.diagnostics()
        for _ in range(3):  # crash the server while every writer is mid-run
            for w in writers:
                seen = len([x for x in w.snapshot() if x.startswith("S ")])
                deadline = time.monotonic() + 60
                while len([x for x in w.snapshot() if x.startswith("S ")]) < seen + 20:
                    assert time.monotonic() < deadline, w.diagnostics()
                    time.sleep(0.02)
            pg_server.restart("immediate")
            restarts += 1
        stop.write_text("stop")
        for w in writers:
            assert w.finish(180) == 0, w.diagnostics()
    finally:
        stop.write_text("stop")
        kill_all(writers)
    journal = PgJournal(pg_dsn)
    acked = 0
    for wid, w in enumerate(writers):
        lines = w.snapshot()
        assert "EXIT" in lines, w.diagnostics()
        done: dict[str, set[int]] = defaultdict(set)
        for line in lines:
            if line.startswith("S "):
                _, key, index = line.split()
                done[key].add(int(index))
            elif line.startswith("R "):
                _, key, value = line.split()
                assert int(value) == writer_expected(wid), (key, value)
        for key, indices in done.items():
            detail = journal.get_run(f"writer:{key}")
            completed = [a for a in detail.attempts if a.status == "completed"]
            positions = [a.position for a in completed]
            assert len(positions) == len(set(positions)), f"{key}: a step completed twice"
            missing = indices - set(positions)
            assert not missing, f"{key}: acknowledged steps {sorted(missing)} were lost"
            acked += len(indices)
    assert restarts == 3 and acked >= 4 * 60
    journal.close()
    print(f"\npg restart: {restarts} crashes of the server, {acked} acknowledged steps kept")
