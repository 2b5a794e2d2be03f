"""Run leases between real processes: one run is executed by one process at a time.

Workers (workers/lock_worker.py) connect to the journal, then all call the workflow at the same
wall-clock instant written by the test into a go file. Every executed step leaves a line
"<pid> <index>" in a per-round file, so the test sees exactly who executed what.

The last two tests take the lease holder away: its process is SIGKILLed (a waiter must take
over), or the journal owner is SIGKILLed while the holder is alive (the holder must keep it).
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from letitloop import open_journal
from letitloop.journal._config import JournalPaths
from tests.crash.crash_helpers import Worker, kill_all, read_lines
from tests.helpers import owner_pid, wait_until

LOCKED_EXIT = 3
RACE_STEPS = 8
RACE_SLEEP = 0.03  # the winner holds the run for >= 240 ms: a loser always meets the lease


def expected(n_steps: int) -> int:
    acc = 1
    for i in range(n_steps):
        acc = (acc * 3 + i) % 1_000_000_007
    return acc


@dataclass
class Outcome:
    pid: int
    rc: int
    kind: str  # "RESULT" | "LOCKED"
    value: int | None
    elapsed: float


def start_together(
    journal_path: Path, tmp_path: Path, keys: list[str], steps: int, sleep: float, timeout: float
) -> tuple[list[Outcome], dict[str, list[tuple[int, int]]]]:
    """One worker per key (repeat a key to race on it), all released at the same instant.

    Returns each worker's outcome and, per distinct key, the (pid, index) lines of executed steps.
    """
    tag = f"{keys[0]}-{len(keys)}"
    go = tmp_path / f"{tag}.go"
    workers: list[Worker] = []
    try:
        for key in keys:
            workers.append(
                Worker(
                    "lock_worker.py",
                    journal_path,
                    key,
                    steps,
                    sleep,
                    tmp_path / f"{key}.lines",
                    go,
                    timeout,
                    stderr_path=tmp_path / "lock_worker.stderr",
                )
            )
        for w in workers:
            assert w.wait_prefix("READY", 30), f"worker not ready: {w.diagnostics()}"
        tmp = tmp_path / f"{tag}.go.tmp"
        tmp.write_text(repr(time.time() + 0.05))
        os.replace(tmp, go)  # atomic: workers never read a half-written start time
        outcomes = []
        for w in workers:
            rc = w.finish(60)
            assert rc in (0, LOCKED_EXIT), f"worker failed: {w.diagnostics()}"
            line = next(x for x in w.snapshot() if x.startswith(("RESULT ", "LOCKED ")))
            parts = line.split()
            value = int(parts[1]) if parts[0] == "RESULT" else None
            outcomes.append(Outcome(w.pid, rc, parts[0], value, float(parts[-1])))
    finally:
        kill_all(workers)
    executed = {}
    for key in dict.fromkeys(keys):
        pairs = [line.split() for line in read_lines(tmp_path / f"{key}.lines")]
        executed[key] = [(int(p), int(i)) for p, i in pairs]
    return outcomes, executed


def assert_each_step_once_by_one_process(lines: list[tuple[int, int]], steps: int) -> int:
    """No index executed twice or by two processes; every index executed. Returns the executor."""
    counts = Counter(i for _, i in lines)
    assert sorted(counts) == list(range(steps)), f"steps executed: {sorted(counts)}"
    twice = {i: n for i, n in counts.items() if n > 1}
    assert not twice, f"steps executed more than once: {twice} ({lines})"
    pids = {p for p, _ in lines}
    assert len(pids) == 1, f"steps of one run executed by several processes: {lines}"
    return pids.pop()


def assert_runs_completed(journal_path: Path, run_ids: list[str], steps: int) -> None:
    """The journal stays readable: list_runs works, each run completed with one attempt per step."""
    journal = open_journal(journal_path)
    status = {r.run_id: (r.status, r.steps_done) for r in journal.list_runs(limit=10_000)}
    for run_id in run_ids:
        assert status.get(run_id) == ("completed", steps), (run_id, status.get(run_id))
        attempts = journal.get_run(run_id).attempts
        assert [(a.position, a.attempt, a.status) for a in attempts] == [
            (i, 1, "completed") for i in range(steps)
        ], run_id


@pytest.mark.timeout(120)
def test_same_run_started_together_loser_gets_run_locked(
    journal_path: Path, tmp_path: Path
) -> None:
    """20 rounds: two processes call the same fresh run at the same instant (lock_timeout=0).

    Proves: in every round exactly one process executes the steps, each exactly once; the other
    gets RunLockedError at once (well under a second, exit code 3) and executes nothing; the
    winner's result is right; afterwards every run is listed as completed.
    """
    rounds, locked, late = 20, 0, 0
    run_ids = []
    for n in range(rounds):
        key = f"race-{n}"
        run_ids.append(f"locks:{key}")
        outcomes, executed = start_together(
            journal_path, tmp_path, [key, key], RACE_STEPS, RACE_SLEEP, 0
        )
        winner = assert_each_step_once_by_one_process(executed[key], RACE_STEPS)
        [won] = [o for o in outcomes if o.pid == winner]
        [lost] = [o for o in outcomes if o.pid != winner]
        assert (won.kind, won.value) == ("RESULT", expected(RACE_STEPS)), won
        if lost.kind == "LOCKED":
            locked += 1
            assert lost.rc == LOCKED_EXIT
            assert lost.elapsed < 1.0, f"round {n}: RunLockedError took {lost.elapsed:.3f} s"
        else:  # arrived after the winner had finished: the journaled result, nothing executed
            late += 1
            assert lost.value == expected(RACE_STEPS), lost
    assert late <= rounds // 10, f"{late} of {rounds} losers never met the lease"
    assert_runs_completed(journal_path, run_ids, RACE_STEPS)
    print(f"\nimmediate lock: {locked} RunLockedError, {late} late losers in {rounds} rounds")


@pytest.mark.timeout(120)
def test_same_run_started_together_loser_waits_for_result(
    journal_path: Path, tmp_path: Path
) -> None:
    """12 rounds: two processes call the same fresh run at the same instant with lock_timeout=30.

    Proves: exactly one process executes each step, once; the other waits for the lease and then
    returns the journaled result without executing anything; both results are right.
    """
    rounds, waited = 12, 0
    run_ids = []
    for n in range(rounds):
        key = f"wait-{n}"
        run_ids.append(f"locks:{key}")
        outcomes, executed = start_together(
            journal_path, tmp_path, [key, key], RACE_STEPS, RACE_SLEEP, 30
        )
        winner = assert_each_step_once_by_one_process(executed[key], RACE_STEPS)
        assert all(o.rc == 0 and o.value == expected(RACE_STEPS) for o in outcomes), outcomes
        [lost] = [o for o in outcomes if o.pid != winner]
        if lost.elapsed >= RACE_STEPS * RACE_SLEEP / 2:
            waited += 1
    assert waited >= rounds - 1, f"the loser waited for the lease in only {waited} of {rounds}"
    assert_runs_completed(journal_path, run_ids, RACE_STEPS)
    print(f"\nlock_timeout: the loser waited for the winner in {waited} of {rounds} rounds")


@pytest.mark.timeout(120)
def test_four_processes_on_four_runs_concurrently(journal_path: Path, tmp_path: Path) -> None:
    """4 processes run 4 different 100-step runs at the same time.

    Proves: leases of different runs do not block each other; all finish with the right
    results; the journal holds 4 completed runs with 100 completed steps each (checked through
    the API and through SQL).
    """
    keys = [f"par-{k}" for k in range(4)]
    outcomes, executed = start_together(journal_path, tmp_path, keys, 100, 0.002, 0)
    assert all(o.rc == 0 and o.value == expected(100) for o in outcomes), outcomes
    by_pid = {o.pid for o in outcomes}
    executors = {key: assert_each_step_once_by_one_process(executed[key], 100) for key in keys}
    assert set(executors.values()) == by_pid, "each process executes its own run"
    run_ids = [f"locks:{key}" for key in keys]
    assert_runs_completed(journal_path, run_ids, 100)
    rows = open_journal(journal_path).sql(
        "SELECT run_id, count(*) FILTER (WHERE status = 'completed'), count(DISTINCT position) "
        "FROM steps WHERE run_id LIKE 'locks:par-%' GROUP BY run_id ORDER BY run_id"
    )["rows"]
    assert rows == [[run_id, 100, 100] for run_id in run_ids]


# -- a lease holder that stops existing: its process, or the journal owner ---------------------


def launch(
    journal_path: Path,
    tmp_path: Path,
    key: str,
    steps: int,
    sleep: float,
    lock_timeout: float,
    go_name: str,
) -> tuple[Worker, Path]:
    """A lock worker that starts when its own go file appears."""
    go = tmp_path / go_name
    w = Worker(
        "lock_worker.py",
        journal_path,
        key,
        steps,
        sleep,
        tmp_path / f"{key}.lines",
        go,
        lock_timeout,
        stderr_path=tmp_path / "lock_worker.stderr",
    )
    assert w.wait_prefix("READY", 30), f"worker not ready: {w.diagnostics()}"
    return w, go


def release(go: Path) -> None:
    tmp = go.with_name(go.name + ".tmp")
    tmp.write_text(repr(time.time()))
    os.replace(tmp, go)


@pytest.mark.timeout(60)
def test_waiting_process_takes_over_when_holder_is_sigkilled(
    journal_path: Path, tmp_path: Path
) -> None:
    """A executes a 4-step run; B calls it with lock_timeout and waits; A is SIGKILLed inside
    step 1. Proves: B gets the lease as soon as A's death is noticed, replays step 0 without
    running it, re-runs only the in-flight step 1, and completes with the right result."""
    key = "takeover"
    lines = tmp_path / f"{key}.lines"
    a, go_a = launch(journal_path, tmp_path, key, 4, 0.6, 0, "a.go")
    b, go_b = launch(journal_path, tmp_path, key, 4, 0.6, 30, "b.go")
    try:
        release(go_a)
        wait_until(
            lambda: len(read_lines(lines)) >= 2, 10, what="A to reach step 1", interval=0.005
        )
        release(go_b)
        time.sleep(0.2)  # B is now waiting for A's lease
        assert a.sigkill(), "A was not running"
        assert b.finish(30) == 0, b.diagnostics()
    finally:
        kill_all([a, b])
    assert any(x.startswith(f"RESULT {expected(4)} ") for x in b.snapshot()), b.snapshot()
    executed = [(int(p), int(i)) for p, i in (x.split() for x in read_lines(lines))]
    assert executed == [(a.pid, 0), (a.pid, 1), (b.pid, 1), (b.pid, 2), (b.pid, 3)], executed
    attempts = open_journal(journal_path).get_run(f"locks:{key}").attempts
    assert [(x.position, x.attempt, x.status) for x in attempts] == [
        (0, 1, "completed"),
        (1, 1, "started"),
        (1, 2, "completed"),
        (2, 1, "completed"),
        (3, 1, "completed"),
    ]


@pytest.mark.timeout(60)
def test_lease_is_kept_when_owner_is_sigkilled_while_another_process_waits(
    journal_path: Path, tmp_path: Path
) -> None:
    """A executes a run (inside a 1 s step); B waits for the lease (lock_timeout); the journal
    OWNER is SIGKILLed. A is still alive and executing, so A must keep the run: no step may be
    executed by both processes, and A must finish (B then returns the journaled result).

    On failure this shows the lease being lost across an owner restart: B reconnects first,
    the new owner grants it the run although A's process still executes it, step 0 runs in
    both processes at once, and A is stopped with RunLockedError ("taken over").
    """
    key = "owner-dies"
    lines = tmp_path / f"{key}.lines"
    a, go_a = launch(journal_path, tmp_path, key, 2, 1.0, 0, "a.go")
    b, go_b = launch(journal_path, tmp_path, key, 2, 1.0, 30, "b.go")
    try:
        release(go_a)
        wait_until(
            lambda: len(read_lines(lines)) >= 1, 10, what="A to start step 0", interval=0.005
        )
        release(go_b)
        time.sleep(0.3)  # B is now waiting for A's lease
        pid = owner_pid(JournalPaths(journal_path).pid_file)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        rc_a, rc_b = a.finish(30), b.finish(30)
    finally:
        kill_all([a, b])
    executed = [(int(p), int(i)) for p, i in (x.split() for x in read_lines(lines))]
    by = {i: sorted({p for p, j in executed if j == i}) for i in range(2)}
    assert all(len(pids) == 1 for pids in by.values()), (
        f"steps executed by both processes after the owner restart: {executed} "
        f"(A={a.pid} rc={rc_a} {a.snapshot()}, B={b.pid} rc={rc_b} {b.snapshot()})"
    )
    assert rc_a == 0 and rc_b == 0, (a.snapshot(), b.snapshot())
