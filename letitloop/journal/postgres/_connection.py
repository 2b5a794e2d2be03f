"""Connections of a PostgreSQL journal: made with keepalives on the journal's schema (migrated
on first use), and the errors PostgreSQL gives, said as journal errors."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import psycopg

from letitloop.errors import JournalError, JournalUnavailableError
from letitloop.journal.postgres import _schema, _waits

if TYPE_CHECKING:
    from letitloop.journal.postgres._journal import PgJournal


def connect(journal: PgJournal, migrate: bool = False) -> Any:
    """A new autocommit connection on ``journal``'s schema (migrating it if ``migrate``), retried
    until its connect timeout."""
    deadline = time.monotonic() + journal.connect_timeout
    pause = 0.05
    while True:
        try:
            conn = psycopg.connect(
                journal.where.dsn,
                autocommit=True,
                connect_timeout=max(2, int(journal.connect_timeout)),
                keepalives=1,
                keepalives_idle=max(1, int(journal.ttl / 3)),
                keepalives_interval=max(1, int(journal.ttl / 6)),
                keepalives_count=3,
                application_name="letitloop",
            )
            break
        except psycopg.OperationalError as exc:
            if time.monotonic() + pause > deadline:
                raise JournalUnavailableError(
                    f"cannot reach the PostgreSQL journal {journal.location}: {str(exc).strip()}",
                    fix="check that the server runs and the URL (host, port, user, "
                    "database) is right; `psql URL` should connect",
                ) from None
            time.sleep(pause)
            pause = min(1.0, pause * 2)
    try:
        # every wait bounded; a frozen writer mid-transaction must not hold events back
        conn.execute(*_waits.settings(journal.write_timeout, journal.ttl))
        if migrate:
            _schema.migrate(conn, journal.where, by=journal.session.split("/", 1)[0])
        else:
            version = _schema.current_version(conn, journal.where.schema)
            _schema.check_not_newer(version, journal.where)
    except psycopg.Error as exc:
        error = explain(journal, exc, conn)  # a wait that ran out names who held it
        conn.close()
        raise error from None
    conn.execute(f'SET search_path TO "{journal.where.schema}"')
    return conn


def explain(
    journal: PgJournal, exc: psycopg.Error, conn: Any, operational: bool = False
) -> JournalError:
    """A statement's error as a journal error; a wait that ran out (``lock_timeout``,
    ``statement_timeout``) names the sessions that held what it waited for. ``operational``:
    an OperationalError of a statement on a connection that still works."""
    if _waits.is_timeout(exc) and conn is not None and not conn.closed:
        where, limit, hint = journal.where, journal.write_timeout, journal._hint
        return _waits.timed_out(exc, conn, journal.location, where.schema, limit, hint)
    if operational:
        return JournalError(f"PostgreSQL journal: {str(exc).strip()}")
    return refused(exc, journal.location)


def refused(exc: psycopg.Error, location: str) -> JournalError:
    """A statement PostgreSQL refused, as a journal error that says what to do."""
    text = " ".join(str(exc).split())
    if getattr(exc, "sqlstate", None) == "42501":  # insufficient_privilege
        return JournalError(
            f"the PostgreSQL role of {location} may not do this: {text}",
            fix="read-only roles can list and inspect runs but not decide, resolve, cancel or run "
            "workflows; use a role granted INSERT, UPDATE and DELETE on the journal's schema "
            "(docs/postgres.md, roles)",
        )
    return JournalError(f"PostgreSQL journal {location}: {text}")


def broken(exc: BaseException) -> bool:
    """Whether an error means the connection (or the server) is gone, not the statement."""
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(("08", "57P"))
