"""Chaos on PostgreSQL with real processes: SIGKILLed workers, a server crashed under writers.

* ``test_workflow_survives_random_sigkills_on_postgres``: the 30-step workflow of
  ``tests/crash/workers/chaos_worker.py`` is SIGKILLed at seeded-random moments and relaunched
  until it finishes: the result is the crash-free one, each position has exactly one completed
  attempt, and no step runs again more often than there were kills.
* ``test_server_restarted_under_four_writers_loses_no_acknowledged_step``: four writer processes
  (``tests/crash/workers/writer_worker.py``) run 200-step workflows while the server is crashed
  and restarted with ``pg_ctl restart -m immediate``: the writers finish by themselves and every
  step they saw acknowledged is in the journal, once.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from letitloop.journal.postgres._journal import PgJournal
from tests.crash.crash_helpers import Worker, kill_all, read_lines

KILLS = 25
# what tests/crash/workers/chaos_worker.py and writer_worker.py do (as in test_kill_chaos.py)
N_STEPS = 30
CHAOS_RUN = "chaos:chaos"
WRITER_STEPS = 200


def chaos_expected() -> int:
    value = 17
    for i in range(N_STEPS):
        value = (value * 31 + i * 7 + 1) % 1_000_000_007
    return value


def writer_expected(wid: int) -> int:
    acc = wid
    for i in range(WRITER_STEPS):
        acc = (acc * 7 + i + wid) % 1_000_003
    return acc


def parse_side_effects(path: Path) -> dict[int, list[tuple[int, int]]]:
    """index -> [(pid, attempt), ...] in file order."""
    out: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for line in read_lines(path):
        index, token = line.split()
        pid, attempt = token.split(":")
        out[int(index)].append((int(pid), int(attempt)))
    return out


def _result(w: Worker) -> int | None:
    line = next((x for x in w.snapshot() if x.startswith("RESULT ")), None)
    return int(line.split()[1]) if line else None


@pytest.mark.timeout(300)
def test_workflow_survives_random_sigkills_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    side = tmp_path / "side_effects.txt"
    rng = random.Random(1616)
    kills = launches = 0
    result: int | None = None
    w: Worker | None = None
    try:
        while result is None:
            assert launches < 300, f"no result after {launches} launches, {kills} kills"
            launches += 1
            w = Worker("chaos_worker.py", pg_dsn, side, stderr_path=tmp_path / "w.err")
            assert w.wait_prefix("READY", 60), w.diagnostics()
            progress = len({line.split()[0] for line in read_lines(side)})
            short = kills < KILLS and progress > kills * (N_STEPS - 8) / KILLS
            time.sleep(rng.uniform(0.0, 0.03) if short else rng.uniform(0.02, 0.25))
            landed = w.sigkill()
            result = _result(w)
            if result is not None:
                break
            assert landed, w.diagnostics()
            kills += 1
        assert kills >= KILLS // 2, f"only {kills} kills landed"
        assert result == chaos_expected()
        lines_before = read_lines(side)
        w = Worker("chaos_worker.py", pg_dsn, side, stderr_path=tmp_path / "w.err")
        assert w.finish(60) == 0, w.diagnostics()
        assert _result(w) == chaos_expected()
        assert read_lines(side) == lines_before, "a completed run executed steps again"
    finally:
        if w is not None:
            w.kill()
    effects = parse_side_effects(side)
    assert sorted(effects) == list(range(N_STEPS))
    re_executed = sum(len(v) - 1 for v in effects.values())
    assert re_executed <= kills, f"{re_executed} re-executions for {kills} kills"
    journal = PgJournal(pg_dsn)
    detail = journal.get_run(CHAOS_RUN)
    assert detail.run.status == "completed" and detail.run.steps_done == N_STEPS
    by_pos: dict[int, list[Any]] = defaultdict(list)
    for a in detail.attempts:
        by_pos[a.position].append(a)
    for pos, attempts in by_pos.items():
        assert [a.status for a in attempts].count("completed") == 1, (pos, attempts)
        assert attempts[-1].status == "completed", (pos, attempts)
        executed = [att for _, att in effects[pos]]
        assert executed[-1] == attempts[-1].attempt, f"position {pos} ran after completing"
    journal.close()
    print(f"\npg chaos: {launches} launches, {kills} kills, {re_executed} re-executed steps")


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
