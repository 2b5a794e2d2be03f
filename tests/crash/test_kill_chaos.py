"""Chaos tests with real processes, real SIGKILL and a real DuckDB journal (no mocks).

* ``test_workflow_survives_random_sigkills`` (on DuckDB and on PostgreSQL): the process running
  a workflow is killed again
  and again at random moments; relaunching it must finish with the crash-free result, never
  running a completed step again.
* ``test_owner_sigkilled_during_writes_loses_no_acknowledged_write``: the journal's owner
  process is killed again and again under concurrent writers; no acknowledged write is lost and
  the writers carry on by themselves.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from letitloop import open_journal
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import stop_owner
from tests.crash.crash_helpers import (
    CHAOS_RUN,
    N_STEPS,
    WRITER_STEPS,
    Worker,
    chaos_expected,
    kill_all,
    parse_side_effects,
    read_lines,
    result_of,
    writer_expected,
)
from tests.helpers import owner_pid, pid_alive, wait_until

# kills that must land before the 30-step run completes, and the seed of the kill moments
KILLS = {"duckdb": (50, 1234), "postgres": (25, 1616)}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", sorted(KILLS))
def test_workflow_survives_random_sigkills(
    backend: str, journal_path: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """SIGKILL a 30-step workflow >= 50 times (25 on PostgreSQL) at seeded-random moments,
    relaunching each time, on the DuckDB journal and on PostgreSQL.

    Proves: the relaunched run finishes with exactly the crash-free result; every step ran;
    a step is executed again only when it was in flight at a kill (each position has exactly
    one completed attempt in the journal, all other attempts are "started" ones cut short, and
    the side-effect lines match those attempts one to one); a completed run is not executed
    again; and the DuckDB file opens cleanly afterwards with the 30 completed steps.

    Kill timing: measured from the worker's READY line (journal connected). To get >= 50 kills
    within 30 steps, a "short" kill (0-30 ms: lands in open_run, replay or the first step)
    is used whenever progress runs ahead of a budget, otherwise a "long" kill (20-250 ms,
    lands inside steps or between them).
    """
    target: Path | str = journal_path if backend == "duckdb" else request.getfixturevalue("pg_dsn")
    MIN_KILLS, seed = KILLS[backend]
    side = tmp_path / "side_effects.txt"
    errlog = tmp_path / "chaos_worker.stderr"
    rng = random.Random(seed)
    kills = launches = 0
    kinds: Counter[str] = Counter()
    result: int | None = None
    w: Worker | None = None
    try:
        while result is None:
            assert launches < 400, f"no result after {launches} launches, {kills} kills"
            launches += 1
            w = Worker("chaos_worker.py", target, side, stderr_path=errlog)
            assert w.wait_prefix("READY", 60), f"worker never got ready: {w.diagnostics()}"
            progress = len({line.split()[0] for line in read_lines(side)})
            if kills < MIN_KILLS and progress > kills * (N_STEPS - 8) / MIN_KILLS:
                kind, delay = "short", rng.uniform(0.0, 0.03)
            else:
                kind, delay = "long", rng.uniform(0.02, 0.25)
            time.sleep(delay)
            landed = w.sigkill()
            result = result_of(w)
            if result is not None:
                break  # it finished first: this kill (if any) did not land before completion
            assert landed, f"worker exited without a result: {w.diagnostics()}"
            kills += 1
            kinds[kind] += 1
        assert kills >= MIN_KILLS, f"only {kills} kills landed before the run completed"
        assert result == chaos_expected()

        # A completed run returns its journaled result without executing anything.
        lines_before = read_lines(side)
        w = Worker("chaos_worker.py", target, side, stderr_path=errlog)
        assert w.finish(60) == 0, w.diagnostics()
        assert result_of(w) == chaos_expected()
        assert read_lines(side) == lines_before, "a completed run executed steps again"
    finally:
        if w is not None:
            w.kill()

    effects = parse_side_effects(side)
    assert sorted(effects) == list(range(N_STEPS)), "some step never ran"
    extra_lines = sum(len(v) - 1 for v in effects.values())
    assert extra_lines <= kills

    journal = open_journal(target)
    detail = journal.get_run(CHAOS_RUN)
    assert detail.run.status == "completed"
    assert detail.run.steps_done == N_STEPS
    assert 1 <= detail.run.attempt <= launches  # one try per launch that reached open_run
    by_pos: dict[int, list] = defaultdict(list)  # type: ignore[type-arg]
    for a in detail.attempts:
        by_pos[a.position].append(a)
    assert sorted(by_pos) == list(range(N_STEPS))
    cut_short_before_effect = 0
    for pos, attempts in by_pos.items():
        numbers = [a.attempt for a in attempts]
        assert numbers == list(range(1, len(attempts) + 1)), (pos, numbers)
        done = [a for a in attempts if a.status == "completed"]
        assert len(done) == 1, f"position {pos}: {len(done)} completed attempts"
        assert done[0].attempt == numbers[-1], f"position {pos}: an attempt after completion"
        assert all(a.status == "started" for a in attempts[:-1]), (pos, attempts)
        assert attempts[0].name == f"step-{pos}"
        executed = [att for _, att in effects[pos]]
        assert executed[-1] == done[0].attempt, f"position {pos}: ran again after completing"
        assert max(executed) == done[0].attempt, f"position {pos}: an attempt after completing"
        if backend == "postgres":
            # a step's "started" record is held up to 50 ms for the next write (one round trip
            # a step, docs/postgres.md): a try killed sooner leaves no trace, and the next try
            # has its number. The retry policy counts failures, not starts: nothing else moves.
            continue
        # DuckDB: the owner outlives the killed process, so every try's start is journaled
        assert len(set(executed)) == len(executed), f"position {pos}: an attempt ran twice"
        assert set(executed) <= set(numbers), f"position {pos}: unjournaled attempt {executed}"
        # attempts killed after their start was journaled but before the side effect
        silent = len(attempts) - len(executed)
        cut_short_before_effect += silent
        assert len(attempts) - 1 == (len(executed) - 1) + silent
    assert sum(len(v) - 1 for v in by_pos.values()) <= kills, "more re-executions than kills"
    print(
        f"\nchaos ({backend}): {launches} launches, {kills} kills ({dict(kinds)}), {extra_lines} "
        f"re-executed steps, {cut_short_before_effect} attempts cut before their side effect"
    )
    if backend == "postgres":
        journal.close()
        return
    rows = journal.sql(
        f"SELECT count(*) FROM steps WHERE run_id = '{CHAOS_RUN}' AND status = 'completed'"
    )["rows"]
    assert rows == [[N_STEPS]]

    assert stop_owner(journal_path) is not None
    import duckdb

    db = duckdb.connect(str(journal_path), read_only=True)
    try:
        n, positions = db.execute(
            "SELECT count(*), count(DISTINCT position) FROM steps "
            "WHERE run_id = ? AND status = 'completed'",
            [CHAOS_RUN],
        ).fetchone()
        status = db.execute("SELECT status FROM runs WHERE run_id = ?", [CHAOS_RUN]).fetchone()
    finally:
        db.close()
    assert (n, positions) == (N_STEPS, N_STEPS)
    assert status == ("completed",)


# -- the owner is killed under concurrent writers ----------------------------------------------

N_WRITERS = 4
OWNER_KILLS = 20


@pytest.mark.timeout(200)
def test_owner_sigkilled_during_writes_loses_no_acknowledged_write(
    journal_path: Path, tmp_path: Path
) -> None:
    """SIGKILL the journal owner >= 20 times while 4 writers run 200-step workflows.

    Kill moments (seeded): "early" ones 0-30 ms after a new owner published its pid (clients are
    reconnecting, re-taking leases, the owner is loading runs), "late" ones 20-300 ms after
    that owner acknowledged new writes. Writers run until the test has killed enough owners.

    Each writer prints a step's index right after ``step()`` returned (the write was
    acknowledged after the owner's fdatasync). Proves: writers never notice (they reconnect,
    start a new owner and resend), every acknowledged step is in the journal as completed
    (through ``get_run`` and through SQL), each position has exactly one attempt (resends are
    idempotent), and every run's result is right.
    """
    paths = JournalPaths(journal_path)
    stop_file = tmp_path / "stop"
    rng = random.Random(4321)
    killed: set[int] = set()
    kinds: Counter[str] = Counter()
    writers: list[Worker] = []

    def printed() -> int:
        return sum(len(w.snapshot()) for w in writers)

    def new_live_owner() -> bool:
        pid = owner_pid(paths.pid_file)
        return pid is not None and pid not in killed and pid_alive(pid)

    def check_writers_alive() -> None:
        for w in writers:
            assert w.proc.poll() is None, (
                f"writer {w.pid} died after {len(killed)} owner kills: {w.diagnostics()}"
            )

    def dead_writer() -> bool:
        return any(w.proc.poll() is not None for w in writers)

    try:
        writers = [
            Worker(
                "writer_worker.py",
                journal_path,
                k,
                stop_file,
                WRITER_STEPS,
                stderr_path=tmp_path / f"writer{k}.stderr",
            )
            for k in range(N_WRITERS)
        ]
        while len(killed) < OWNER_KILLS:
            wait_until(
                lambda: new_live_owner() or dead_writer(),
                30,
                what=lambda: f"a new owner after {len(killed)} kills",
                interval=0.005,
            )
            check_writers_alive()
            assert new_live_owner(), f"no new owner after {len(killed)} kills"
            pid = owner_pid(paths.pid_file)
            assert pid is not None
            if rng.random() < 0.4:  # early: clients are still reconnecting, relocking, loading
                kinds["early"] += 1
                time.sleep(rng.uniform(0.0, 0.03))
            else:  # late: once this owner has acknowledged writes
                kinds["late"] += 1
                before = printed()
                wait_until(
                    lambda b=before: printed() > b or dead_writer(),
                    30,
                    what="the writers to make progress",
                    interval=0.005,
                )
                check_writers_alive()
                assert printed() > before, "writers made no progress"
                time.sleep(rng.uniform(0.02, 0.3))
            check_writers_alive()
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        stop_file.touch()
        for w in writers:
            assert w.finish(120) == 0, f"writer failed: {w.diagnostics()}"
    finally:
        kill_all(writers)

    journal = open_journal(journal_path)
    acked: dict[str, set[int]] = defaultdict(set)
    results: dict[str, int] = {}
    for wid, w in enumerate(writers):
        lines = w.snapshot()
        assert lines[0] == "READY" and lines[-1] == "EXIT", w.diagnostics()
        for line in lines:
            if line.startswith("S "):
                _, key, index = line.split()
                acked[f"writer:{key}"].add(int(index))
            elif line.startswith("R "):
                _, key, value = line.split()
                results[f"writer:{key}"] = int(value)
                assert int(value) == writer_expected(wid), f"wrong result of {key}"
    assert set(results) == set(acked)
    total_acked = sum(len(v) for v in acked.values())
    assert total_acked == len(results) * WRITER_STEPS

    for run_id, indices in acked.items():
        detail = journal.get_run(run_id)
        assert detail.run.status == "completed", run_id
        done = {a.position for a in detail.attempts if a.status == "completed"}
        assert indices <= done, f"{run_id}: acknowledged steps lost: {sorted(indices - done)}"
        assert [(a.position, a.attempt) for a in detail.attempts] == [
            (i, 1) for i in range(WRITER_STEPS)
        ], f"{run_id}: a resend became a second attempt"

    rows = journal.sql(
        "SELECT run_id, position FROM steps WHERE status = 'completed' AND run_id LIKE 'writer:%'"
    )["rows"]
    in_sql: dict[str, set[int]] = defaultdict(set)
    for run_id, position in rows:
        in_sql[run_id].add(position)
    for run_id, indices in acked.items():
        assert indices <= in_sql[run_id], (
            f"{run_id}: missing in SQL: {sorted(indices - in_sql[run_id])}"
        )
    statuses = {r.run_id: r.status for r in journal.list_runs(limit=1000)}
    assert all(statuses[r] == "completed" for r in results)
    torn = journal.stats()["torn_tails_cut"]
    assert isinstance(torn, int)
    print(
        f"\nowner kills: {len(killed)} ({dict(kinds)}), runs: {len(results)}, "
        f"acknowledged steps: {total_acked}, torn_tails_cut (last owner): {torn}"
    )
