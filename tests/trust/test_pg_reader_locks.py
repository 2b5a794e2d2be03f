"""A read-only PostgreSQL role cannot hang or fool the journal (issue 35, point 4).

Real parts: the session's PostgreSQL server, the roles of docs/postgres.md created with the SQL
the page shows (``lil_viewer`` may only SELECT), workflow processes that really run and are
really SIGKILLed. On the old code a viewer holding ``pg_advisory_lock(hashtext(run_id))`` made
every ``open_run`` of that run wait forever (no ``lock_timeout``, whatever
``LIL_WRITE_TIMEOUT`` said), a viewer holding a dead holder's lease lock kept its run looking
alive, and a writer's session holding a run's row made the next call wait forever too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from letitloop.journal.postgres import _schema
from tests.helpers import ROOT, child_env, wait_until
from tests.postgres.test_cli_roles import roles

__all__ = ["roles"]

GATES_VERSION = next(i + 1 for i, m in enumerate(_schema.MIGRATIONS) if "run_gates" in m)
WORKFLOW = r"""
import sys, time
from letitloop import durable, step
url, key, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])

def one():
    print("INSIDE", flush=True)
    time.sleep(pause)
    return 41

@durable(journal=url, run_id=key, name="gate")
def gate():
    return step("one", one) + 1

started = time.monotonic()
try:
    print("RESULT", gate(), flush=True)
except Exception as exc:
    print("ERROR", type(exc).__name__, " | ".join(str(exc).splitlines()), flush=True)
print("SECONDS", round(time.monotonic() - started, 1), flush=True)
"""


def _call(url: str, key: str, *, limit: float = 3.0, deadline: float = 90.0) -> dict[str, str]:
    """Call the workflow in a process of its own with LIL_WRITE_TIMEOUT=limit; what it said."""
    env = child_env(LIL_WRITE_TIMEOUT=str(limit))
    try:
        done = subprocess.run(
            [sys.executable, "-c", WORKFLOW, url, key, "0"],
            capture_output=True,
            text=True,
            timeout=deadline,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the call still waited after {deadline:g} s (LIL_WRITE_TIMEOUT={limit:g})")
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert said, done.stderr[-3000:]
    return said


@pytest.fixture
def viewer(roles: dict[str, str]) -> Iterator[Any]:
    with psycopg.connect(roles["viewer"], autocommit=True) as conn:
        conn.execute("SET search_path TO letitloop")
        yield conn


def _pid(conn: Any) -> int:
    return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])


@pytest.mark.timeout(300)
def test_a_viewer_holding_every_advisory_lock_cannot_stop_a_run(
    roles: dict[str, str], viewer: Any
) -> None:
    """The viewer takes the advisory lock the old open_run waited for, the lease locks of the
    next tokens and the migration lock; the run opens, resumes and completes at once. The row
    lock that now serializes open_run needs UPDATE: the viewer is refused it."""
    assert _call(roles["worker"], "r1")["RESULT"] == "42"  # the run exists; now it is reopened
    held = ["SELECT pg_advisory_lock(hashtext('gate:r1'))", "SELECT pg_advisory_lock(1818848365)"]
    held += [f"SELECT pg_advisory_lock(hashtext('gate:r1'), {t})" for t in range(1, 8)]
    held += [f"SELECT pg_advisory_lock(hashtext('gate:r2'), {t})" for t in range(1, 8)]
    held += ["SELECT pg_advisory_lock(hashtext('gate:r2'))"]
    for sql in held:
        viewer.execute(sql)
    for key in ("r1", "r2"):  # a completed run called again; a new run
        said = _call(roles["worker"], key, limit=20.0, deadline=60.0)
        assert said.get("RESULT") == "42", said
        assert float(said["SECONDS"]) < 15, said
    for mode in ("FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            viewer.execute(f"SELECT 1 FROM run_gates WHERE slot = 0 {mode}")


@pytest.mark.timeout(300)
def test_a_dead_holders_run_is_taken_over_though_a_viewer_holds_its_lease_lock(
    roles: dict[str, str], viewer: Any
) -> None:
    """A worker dies inside a step (SIGKILL); the viewer had taken the advisory lock of its
    lease (run, token). The run is free at once all the same: the lock counts only on the
    session the lease names."""
    env = child_env()
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKFLOW, roles["worker"], "dies", "600"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("INSIDE")
        token = viewer.execute("SELECT lease_token FROM runs WHERE run_id = 'gate:dies'")
        lease = int(token.fetchone()[0])
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        # the dead session's lock goes with it; the viewer takes it as soon as it is free
        viewer.execute("SELECT pg_advisory_lock(hashtext('gate:dies'), %s)", [lease])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = _call(roles["worker"], "dies", limit=20.0, deadline=60.0)
    assert said.get("RESULT") == "42", said  # not RunLockedError: nobody alive holds it


@pytest.mark.timeout(300)
def test_every_wait_is_bounded_and_names_the_backend_that_holds_it(
    roles: dict[str, str], viewer: Any
) -> None:
    """A writer's session that holds the run's row (a frozen process mid-transaction, a
    person's psql) or its gate: the call waits LIL_WRITE_TIMEOUT (3 s here), then fails with
    JournalUnavailableError naming that backend's pid and role. A schema that must be migrated
    while the viewer holds the migration lock: the same, naming the viewer."""
    assert _call(roles["worker"], "held")["RESULT"] == "42"
    for sql in (
        "SELECT 1 FROM runs WHERE run_id = 'gate:held' FOR UPDATE",
        "SELECT 1 FROM run_gates WHERE slot = hashtext('gate:held') & 1023 FOR NO KEY UPDATE",
    ):
        with psycopg.connect(roles["worker"], autocommit=True) as holder:
            holder.execute("SET search_path TO letitloop")
            holder.execute("BEGIN")
            holder.execute(sql)
            pid = _pid(holder)
            t = time.monotonic()
            said = _call(roles["worker"], "held", limit=3.0)
            assert time.monotonic() - t < 60
            assert said.get("ERROR", "").startswith("JournalUnavailableError"), said
            assert f"pid {pid} (role lil_worker" in said["ERROR"], said
            assert "idle in transaction" in said["ERROR"] and "LIL_WRITE_TIMEOUT" in said["ERROR"]
            assert f"pg_terminate_backend({pid})" in said["ERROR"], said
            holder.execute("ROLLBACK")
    assert _call(roles["worker"], "held")["RESULT"] == "42"  # nothing was left behind

    with psycopg.connect(roles["owner"], autocommit=True) as owner:  # the schema falls behind
        owner.execute("DROP TABLE letitloop.run_gates")
        owner.execute("DELETE FROM letitloop.lil_migrations WHERE version = %s", [GATES_VERSION])
    viewer.execute("SELECT pg_advisory_lock(1818848365)")  # "lilm": the migration lock
    said = _call(roles["owner"], "migrating", limit=3.0)
    assert said.get("ERROR", "").startswith("JournalUnavailableError"), said
    assert f"pid {_pid(viewer)} (role lil_viewer" in said["ERROR"], said
    viewer.execute("SELECT pg_advisory_unlock_all()")
    assert _call(roles["owner"], "migrating")["RESULT"] == "42"


@pytest.mark.timeout(300)
def test_a_viewer_cannot_silence_notifications(
    roles: dict[str, str], viewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The viewer holds the advisory lock whose holder used to be the one delivering client,
    and tries to take the delivery lease's row: refused; a worker's client delivers a failed
    run's notice all the same."""
    from letitloop.journal.postgres._journal import PgJournal
    from tests.notify.receiver import Receiver

    viewer.execute("SELECT pg_advisory_lock(1818848366)")  # "liln": the old delivery lock
    receiver = Receiver()
    monkeypatch.setenv("LIL_NOTIFY_URL", receiver.url)
    monkeypatch.setenv("LIL_NOTIFY_SECRET", "pg-secret")
    deliverer = PgJournal(roles["worker"])
    try:
        wait_until(  # its first scan places the cursor at the journal's end
            lambda: viewer.execute("SELECT count(*) FROM outbox_cursor").fetchone() != (0,),
            60,
            what="a client to deliver (none does: the viewer silenced them)",
            interval=0.1,
        )
        monkeypatch.delenv("LIL_NOTIFY_URL")  # the failing run's own process does not deliver
        fails = subprocess.run(
            [sys.executable, str(ROOT / "tests" / "notify" / "notify_flows.py"), "fail"],
            env=child_env(roles["worker"]),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert fails.returncode == 0, fails.stderr[-2000:]
        wait_until(
            receiver.deliveries,
            60,
            what="a notification (none came: the viewer silenced the notifications)",
            interval=0.1,
        )
        got = [json.loads(body)["event"] for _, body in receiver.deliveries()]
        assert got == ["run_failed"], "the viewer silenced the notifications"
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            viewer.execute("UPDATE lil_delivery SET holder = 'viewer', heartbeat = now()")
    finally:
        deliverer.close()
        receiver.close()
