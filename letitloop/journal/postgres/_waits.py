"""Every wait on the PostgreSQL journal is bounded, and one that runs out names who held it.

Each connection sets ``lock_timeout`` to ``LIL_WRITE_TIMEOUT`` (default 120 s): no statement
waits longer than that for a lock, whoever holds it (another process's transaction, a person's
``psql`` session, a read-only role that took an advisory lock), and ``statement_timeout`` to
twice that, the outer bound of any one statement (migrations excepted: they may rebuild a big
table). When a wait runs out, ``timed_out`` reads ``pg_locks`` and ``pg_stat_activity`` for
the sessions that hold what was waited for (the run's gate and row, the migration lock, the
journal's tables) and makes a ``JournalUnavailableError`` that names their pid and role, with
what to do.

Locks a run's writers must wait for are row locks (``runs``, ``run_gates``: taking them needs
UPDATE on the table), so a read-only role cannot take them at all; advisory locks, which any
role can take, are only ever tried (``pg_try_advisory_lock``), never waited for, except the
migration lock while a schema is behind.
"""

from __future__ import annotations

from typing import Any

from letitloop.errors import JournalUnavailableError

LOCK_TIMEOUT = "55P03"  # lock_not_available: lock_timeout ran out (or NOWAIT)
CANCELED = "57014"  # query_canceled: statement_timeout ran out (or a cancel request)
GATES = 1024  # rows of run_gates: a run's gate is hashtext(run_id) & (GATES - 1)
GATE_SQL = f"SELECT 1 FROM run_gates WHERE slot = hashtext(%s) & {GATES - 1} FOR NO KEY UPDATE"
MIGRATE_LOCK = 0x6C696C6D  # "lilm": the advisory lock that serializes migrations
SHOWN = 3  # blocking sessions named in one message


def settings(write_timeout: float, idle: float) -> tuple[str, list[str]]:
    """The statement that bounds a new connection's waits, and its parameters."""
    ms = max(1, int(write_timeout * 1000))
    return (
        "SELECT set_config('lock_timeout', %s, false), "
        "set_config('statement_timeout', %s, false), "
        "set_config('idle_in_transaction_session_timeout', %s, false)",
        [f"{ms}ms", f"{2 * ms}ms", f"{max(5, int(idle))}s"],
    )


def is_timeout(exc: BaseException) -> bool:
    """Whether a PostgreSQL error is a wait that ran out (lock or statement timeout)."""
    state = getattr(exc, "sqlstate", None)
    return state == LOCK_TIMEOUT or (state == CANCELED and "statement timeout" in str(exc))


def timed_out(
    exc: BaseException,
    conn: Any,
    location: str,
    schema: str,
    seconds: float,
    run_id: str | None = None,
) -> JournalUnavailableError:
    """The error for a wait that ran out, naming the sessions that held what it waited for."""
    which = "lock" if getattr(exc, "sqlstate", None) == LOCK_TIMEOUT else "statement"
    limit = seconds if which == "lock" else 2 * seconds
    about = f" on run {run_id}" if run_id else ""
    try:
        held = blockers(conn, schema, run_id)
    except Exception as probe:  # the connection went too: say what we know
        held = [("PID", f"(could not read pg_locks: {type(probe).__name__})")]
    if held:
        more = f"; and {len(held) - SHOWN} more" if len(held) > SHOWN else ""
        who, pid = "; ".join(text for _, text in held[:SHOWN]) + more, held[0][0]
    else:
        who, pid = "no session holds it any more (it was released as the wait ended)", "PID"
    return JournalUnavailableError(
        f"the PostgreSQL journal {location} waited {limit:g} s for a {which}{about} "
        f"(lock_timeout {seconds:g} s, LIL_WRITE_TIMEOUT) and gave up: held by {who}",
        fix=f"if that session should not hold it, end it (SELECT pg_terminate_backend({pid}); "
        "as a superuser or its own role); if it is only slow, raise LIL_WRITE_TIMEOUT (seconds)",
        run_id=run_id,
    )


def blockers(conn: Any, schema: str, run_id: str | None) -> list[tuple[str, str]]:
    """The other sessions that hold the run's gate or row, the migration lock, or a lock on the
    journal's tables, the most likely first (exact holders, then the oldest transactions)."""
    xids: list[str] = []
    if run_id is not None:
        for sql in (
            f'SELECT xmax::text FROM "{schema}".run_gates WHERE slot = hashtext(%s) & {GATES - 1}',
            f'SELECT xmax::text FROM "{schema}".runs WHERE run_id = %s',
        ):
            try:
                row = conn.execute(sql, [run_id]).fetchone()
            except Exception:  # no such table yet (a schema being migrated)
                continue
            if row and row[0] not in (None, "0"):
                xids.append(str(row[0]))
    rows = conn.execute(_BLOCKERS, {"schema": schema, "xids": xids, "key": MIGRATE_LOCK}).fetchall()
    return [(str(r[0]), _describe(*r)) for r in rows]


_BLOCKERS = """
SELECT a.pid, a.usename, a.application_name, a.state,
       extract(epoch FROM now() - coalesce(a.xact_start, a.backend_start))::int,
       left(regexp_replace(a.query, '\\s+', ' ', 'g'), 120), min(r.rank)
FROM (
  SELECT l.pid,
         CASE WHEN l.locktype = 'relation' THEN 1 ELSE 0 END AS rank
  FROM pg_locks l
  WHERE l.granted AND l.pid <> pg_backend_pid() AND (
       (l.locktype = 'transactionid' AND l.transactionid::text = ANY(%(xids)s))
    OR (l.locktype = 'advisory' AND l.objsubid = 1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND ((l.classid::bigint << 32) | l.objid::bigint) = %(key)s)
    OR (l.locktype = 'relation' AND l.relation IN (
          SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = %(schema)s)))
) r JOIN pg_stat_activity a ON a.pid = r.pid
GROUP BY a.pid, a.usename, a.application_name, a.state, a.xact_start, a.backend_start, a.query
ORDER BY min(r.rank), a.xact_start NULLS LAST
"""


def _describe(
    pid: int, role: str | None, app: str | None, state: str | None, age: int, query: str, _: int
) -> str:
    what = f"backend pid {pid} (role {role or '?'}"
    what += f", application {app!r}" if app else ""
    what += f", {state or 'state unknown'} for {age} s"
    return what + (f", last query: {query}" if query else "") + ")"
