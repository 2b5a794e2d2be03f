"""Workers take over orphaned runs by themselves, on real processes, on a DuckDB journal and on
PostgreSQL: a process running a recoverable workflow (``@durable(recover=True)``, or a call
started with ``workflow.start``) is SIGKILLed mid-step, or inside its side effect, and an idle
``lil worker`` takes the run over and finishes it: the step in flight runs again once at most,
the side effect is applied once (its marker in doubt goes to its reconcile callback). A plain
call is not taken over: it is shown as an orphan with the command that resumes it. A counting
server on 127.0.0.1 sees every step execution and side effect.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.queues.chaos import LIL, Counts, Fleet, counting_server

FLOW = '''
"""Recoverable and plain workflows reporting to the counting server."""
import json
import os
import time
import urllib.request

from letitloop import atomic_marker, durable, step
from letitloop.kernel import current_run

SERVER = os.environ["CHAOS_SERVER"]


def call(path, body):
    req = urllib.request.Request(SERVER + path, data=json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def work(n, name, seconds):
    call("/step", {"run": n, "name": name, "pid": os.getpid()})
    time.sleep(seconds)
    return n


def reconcile(marker):
    return "done" if call("/applied", {"key": marker.run_id})["applied"] else "redo"


def body(n, seconds, linger):
    step("prepare", work, n, "prepare", seconds)
    with atomic_marker("charge", reconcile=reconcile) as go:
        if go:
            call("/effect", {"key": current_run.get().run_id, "run": n, "pid": os.getpid()})
            time.sleep(linger)  # killed here, the marker is in doubt
    step("finish", work, n, "finish", 0.01)
    return n * 2


@durable(recover=True)
def recoverable(n, seconds=0.0, linger=0.0):
    return body(n, seconds, linger)


@durable
def plain(n, seconds=0.0, linger=0.0):
    return body(n, seconds, linger)
'''


@pytest.fixture(params=["duckdb", "postgres"])
def journal_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "duckdb":
        (tmp_path / ".letitloop").mkdir()
        return str(tmp_path / ".letitloop" / "journal.duckdb")
    return request.getfixturevalue("pg_dsn")


def _wait(pred: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def _caller(fleet: Fleet, code: str) -> subprocess.Popen[bytes]:
    """A process that calls a workflow, as an application or a script would."""
    log = fleet.workdir / f"caller-{len(fleet.logs)}.log"
    fleet.logs.append(log)
    with open(log, "wb") as f:
        return subprocess.Popen(
            [sys.executable, "-c", f"import orphanflow\n{code}"],
            cwd=fleet.workdir,
            env=fleet.env,
            stdout=f,
            stderr=subprocess.STDOUT,
        )


def _setup(tmp_path: Path, spec: str, url: str, ttl: float) -> Fleet:
    (tmp_path / "orphanflow.py").write_text(textwrap.dedent(FLOW))
    fleet = Fleet(tmp_path, spec, url, ttl)
    fleet.start(queue="default")  # idle: nothing is queued yet
    return fleet


def _in_flight(counts: Counts, run: int, name: str, pid: int) -> bool:
    with counts.lock:
        return pid in counts.executions.get((run, name), [])


@pytest.mark.timeout(300)
def test_a_recoverable_run_killed_is_taken_over_by_an_idle_worker(
    journal_spec: str, tmp_path: Path
) -> None:
    from letitloop.journal import open_journal

    postgres = journal_spec.startswith("postgres")
    ttl = 3.0 if postgres else 30.0  # DuckDB: at once, whatever the TTL
    journal = open_journal(journal_spec)
    with counting_server() as (url, counts):
        fleet = _setup(tmp_path, journal_spec, url, ttl)
        try:
            assert _wait(lambda: bool(journal.workers()), 60), fleet.output()
            mid_step = _caller(fleet, "orphanflow.recoverable(1, 4.0)")
            in_effect = _caller(fleet, "orphanflow.recoverable(2, 0.0, 30.0)")
            assert _wait(lambda: _in_flight(counts, 1, "prepare", mid_step.pid), 60)
            assert _wait(lambda: bool(counts.effects), 60), fleet.output()
            time.sleep(0.3)
            killed = time.monotonic()
            for p in (mid_step, in_effect):
                p.kill()
                p.wait(30)
            assert _wait(lambda: len(counts.executions[(1, "prepare")]) == 2, ttl + 60)
            took = time.monotonic() - killed
            assert _wait(lambda: len(journal.results(_runs(journal))) == 2, 120), fleet.output()
            # the worker finishes an item just after its run's result: wait for that too
            assert _wait(lambda: all(journal.queue_item(r).outcome for r in _runs(journal)), 60)
        finally:
            fleet.kill_all()
    [worker] = [p.pid for p in fleet.procs]
    runs = _runs(journal)
    assert {journal.queue_item(r).outcome for r in runs} == {"completed"}
    assert {journal.queue_item(r).claims for r in runs} == {2}  # held once, taken over once
    ex = counts.executions
    assert ex[(1, "prepare")] == [mid_step.pid, worker]  # the step in flight ran again, once
    assert ex[(2, "prepare")] == [in_effect.pid]  # a completed step never runs again
    assert ex[(1, "finish")] == [worker] and ex[(2, "finish")] == [worker]
    assert counts.effect_calls == 2 and sorted(counts.effects.values()) == [1, 1]
    if not postgres:
        assert took < 10, took  # the owner saw the process's connections close
    print(f"\n{journal_spec.split(':')[0]}: taken over {took:.2f} s after the SIGKILL (TTL {ttl})")


def _runs(journal: Any) -> list[str]:
    return [i.run_id for i in journal.queue_items(queue="default", limit=100)]


@pytest.mark.timeout(300)
def test_a_started_run_is_taken_over_and_a_plain_call_is_shown_as_an_orphan(
    journal_spec: str, tmp_path: Path
) -> None:
    from letitloop.journal import open_journal
    from letitloop.operate import orphan_summaries

    journal = open_journal(journal_spec)
    with counting_server() as (url, counts):
        fleet = _setup(tmp_path, journal_spec, url, 3.0)
        try:
            started = _caller(fleet, "print(orphanflow.plain.start(3, 4.0).result())")
            called = _caller(fleet, "orphanflow.plain(4, 4.0)")
            assert _wait(lambda: _in_flight(counts, 3, "prepare", started.pid), 60)
            assert _wait(lambda: _in_flight(counts, 4, "prepare", called.pid), 60)
            for p in (started, called):
                p.kill()
                p.wait(30)
            assert _wait(lambda: len(counts.executions[(3, "finish")]) == 1, 120), fleet.output()
            time.sleep(1.0)  # the worker had every chance to take the plain call too
            assert len(counts.executions[(4, "prepare")]) == 1  # it did not
            [orphan] = orphan_summaries(journal)
            assert orphan.workflow == "orphanflow.plain" and orphan.resumable
            assert orphan.command == f"lil runs resume {orphan.run_id}"
            resumed = subprocess.run(
                [LIL, *orphan.command.split()[1:]], cwd=tmp_path, env=fleet.env,
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert resumed.returncode == 0, resumed.stdout + resumed.stderr
            assert orphan_summaries(journal) == []
        finally:
            fleet.kill_all()
    assert sorted(counts.effects.values()) == [1, 1]


@pytest.mark.timeout(300)
def test_a_frozen_caller_past_its_ttl_is_taken_over_and_fenced(pg_dsn: str, tmp_path: Path) -> None:
    """PostgreSQL: a SIGSTOPped caller keeps its connection but its lease lapses."""
    from letitloop.journal import open_journal

    journal = open_journal(pg_dsn)
    ttl = 2.0
    with counting_server() as (url, counts):
        fleet = _setup(tmp_path, pg_dsn, url, ttl)
        try:
            frozen = _caller(fleet, "orphanflow.recoverable(5, 2.0)")
            assert _wait(lambda: _in_flight(counts, 5, "prepare", frozen.pid), 60)
            frozen.send_signal(signal.SIGSTOP)
            stopped = time.monotonic()
            assert _wait(lambda: len(counts.executions[(5, "prepare")]) == 2, 60), fleet.output()
            assert time.monotonic() - stopped >= ttl * 0.9  # not before its lease lapsed
            assert _wait(lambda: len(journal.results(_runs(journal))) == 1, 60), fleet.output()
            os.kill(frozen.pid, signal.SIGCONT)
            assert frozen.wait(60) != 0  # its next write was refused: it stopped
        finally:
            fleet.kill_all()
    assert "LeaseLostError" in fleet.logs[1].read_text(), fleet.output()
    assert counts.effect_calls == 1 and len(counts.executions[(5, "finish")]) == 1
