"""Shared rate limits and the notification outbox on PostgreSQL.

Buckets are rows of ``lil_buckets``: a take locks its row (``FOR UPDATE``), runs the same
arithmetic as every backend (``journal._limits.Bucket``) at the server's clock, and writes the
levels back in one short transaction, so every process and every Dask worker on the journal
shares them and clocks of different machines never matter. Nothing is held while a caller
sleeps: a killed waiter leaves no trace.

Notifications are delivered by whichever client holds the delivery lease, the one row of
``lil_delivery`` (holder, its backend's pid, heartbeat): each client that has notifications
configured starts a delivery thread that tries to claim it every few seconds. A claim succeeds
when the row is free, is the claimant's own, names a backend that is gone (the delivering
process died: its connection went with it) or has not been refreshed for the lease TTL (a
frozen process); the holder refreshes it before each delivery once a third of the TTL has
passed, and stops when it lost it. Claiming needs UPDATE on the table, so a read-only role
cannot silence every notification by holding a lock, as it could the advisory lock used
before. Its cursor and rows live in the journal's schema (``outbox``, ``outbox_cursor``),
and events are read only once every older transaction has committed (``_reads.events``).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from letitloop.errors import ConfigError, LetItLoopError
from letitloop.journal._contract import EventInfo, Notice
from letitloop.journal._limits import Bucket, check_name, check_rate, check_seconds, check_tokens
from letitloop.journal._outbox import Outbox, list_notices, load_config, retry_sql

if TYPE_CHECKING:
    from collections.abc import Callable

    from letitloop.journal.postgres._journal import PgJournal

RETRY_LOCK = 3.0  # seconds between tries of a client that does not deliver
CLAIM = (
    "UPDATE lil_delivery SET holder = %(me)s, holder_pid = pg_backend_pid(), heartbeat = now() "
    "WHERE id = 1 AND (holder IS NULL OR holder = %(me)s "
    "OR heartbeat < now() - make_interval(secs => %(ttl)s) "
    "OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = lil_delivery.holder_pid)) "
    "RETURNING 1"
)
DELIVERY_DDL = (  # part of schema migration 8 (postgres._schema)
    "CREATE TABLE IF NOT EXISTS lil_delivery(id int PRIMARY KEY, holder text, holder_pid int, "
    "heartbeat timestamptz);\n"
    "INSERT INTO lil_delivery VALUES (1, NULL, NULL, NULL) ON CONFLICT DO NOTHING;\n"
)
PERIOD = 0.5  # seconds between delivery rounds

MIGRATION = """
CREATE TABLE IF NOT EXISTS lil_buckets(
  name text PRIMARY KEY, rpm int, tpm int, req float8 NOT NULL, tok float8 NOT NULL,
  at float8 NOT NULL, blocked float8 NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS outbox(
  key text PRIMARY KEY, seq bigint NOT NULL, event text NOT NULL, run_id text NOT NULL,
  created float8 NOT NULL, state text NOT NULL, tries int NOT NULL, next_at float8,
  last_error text, delivered_at float8, body text NOT NULL);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox(state, next_at);
CREATE TABLE IF NOT EXISTS outbox_cursor(id int PRIMARY KEY, seq bigint NOT NULL);
"""

_NOW = "extract(epoch FROM clock_timestamp())::float8"


def _bucket(cur: Any, name: str, rpm: int | None, tpm: int | None) -> tuple[Bucket, float]:
    """The row of ``name``, locked until the transaction ends, and the server's time."""
    row = cur.execute(
        f"SELECT rpm, tpm, req, tok, at, blocked, {_NOW} FROM lil_buckets WHERE name = %s "
        "FOR UPDATE",
        [name],
    ).fetchone()
    if row is None:
        now = float(cur.execute(f"SELECT {_NOW}").fetchone()[0])
        fresh = Bucket.fresh(rpm, tpm, now)
        cur.execute(
            "INSERT INTO lil_buckets VALUES (%s, %s, %s, %s, %s, %s, 0) ON CONFLICT DO NOTHING",
            [name, rpm, tpm, fresh.req, fresh.tok, now],
        )
        return _bucket(cur, name, rpm, tpm)
    return Bucket(row[0], row[1], row[2], row[3], row[4], row[5]), float(row[6])


def _save(cur: Any, name: str, b: Bucket) -> None:
    cur.execute(
        "UPDATE lil_buckets SET rpm = %s, tpm = %s, req = %s, tok = %s, at = %s, blocked = %s "
        "WHERE name = %s",
        [b.rpm, b.tpm, b.req, b.tok, b.at, b.blocked, name],
    )


def take(journal: PgJournal, name: str, rpm: int | None, tpm: int | None, tokens: int) -> float:
    check_name(name)
    rpm, tpm = check_rate(rpm, "rpm"), check_rate(tpm, "tpm")
    if rpm is None and tpm is None:
        raise ConfigError(f"limit {name!r} has neither rpm nor tpm", fix="give rpm= or tpm=")
    check_tokens(tokens)

    def run(conn: Any) -> float:
        with conn.transaction():
            cur = conn.cursor()
            bucket, now = _bucket(cur, name, rpm, tpm)
            bucket.refill(now, rpm, tpm)
            wait = bucket.take(now, tokens)
            _save(cur, name, bucket)
            return wait

    return journal._run(run)


def adjust(journal: PgJournal, name: str, tokens: int) -> None:
    check_name(name)
    check_tokens(tokens, signed=True)
    _change(journal, name, lambda bucket, now: bucket.adjust(tokens))


def block(journal: PgJournal, name: str, seconds: float) -> None:
    check_name(name)
    seconds = check_seconds(seconds)
    _change(journal, name, lambda bucket, now: bucket.block(now, seconds))


def _change(journal: PgJournal, name: str, change: Callable[[Bucket, float], None]) -> None:
    """Refill an existing bucket to the server's now, apply ``change`` and save it, in one
    transaction holding its row; a bucket nobody took from yet is left alone."""

    def run(conn: Any) -> None:
        with conn.transaction():
            cur = conn.cursor()
            row = cur.execute("SELECT 1 FROM lil_buckets WHERE name = %s", [name]).fetchone()
            if row is None:
                return
            bucket, now = _bucket(cur, name, None, None)
            bucket.refill(now, bucket.rpm, bucket.tpm)
            change(bucket, now)
            _save(cur, name, bucket)

    journal._run(run)


def capacity(journal: PgJournal) -> list[dict[str, Any]]:
    def run(cur: Any) -> list[dict[str, Any]]:
        rows = cur.execute(
            f"SELECT name, rpm, tpm, req, tok, at, blocked, {_NOW} FROM lil_buckets ORDER BY name"
        ).fetchall()
        out = []
        for name, rpm, tpm, req, tok, at, blocked, now in rows:
            b = Bucket(rpm, tpm, req, tok, at, blocked)
            b.refill(now, rpm, tpm)
            out.append(
                {"name": name, "rpm": rpm, "tpm": tpm, "requests": round(b.req, 2)}
                | {"tokens": round(b.tok, 1), "blocked_for": round(max(0.0, blocked - now), 2)}
            )
        return out

    return journal._read(run)


def _sql(cur: Any) -> Any:
    def sql(query: str, params: list[Any]) -> list[tuple[Any, ...]]:
        cur.execute(query.replace("?", "%s"), params)
        return list(cur.fetchall()) if cur.description else []

    return sql


def notifications(journal: PgJournal, state: str | None, limit: int) -> list[Notice]:
    return journal._read(lambda cur: list_notices(_sql(cur), state, limit))


def retry(journal: PgJournal, key: str) -> None:
    journal._run(lambda conn: _sql(conn.cursor())(retry_sql(), [key]))


class Delivery:
    """A thread that delivers notifications while this client holds the delivery lease."""

    def __init__(self, journal: PgJournal, cfg: Any) -> None:
        self.journal, self.cfg = journal, cfg
        self.me = f"{journal.session}/notify"
        self.claimed = 0.0  # monotonic time of the last successful claim
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="lil-pg-notify", daemon=True)
        self.thread.start()

    def _claim(self, conn: Any) -> bool:
        row = conn.execute(CLAIM, {"me": self.me, "ttl": self.journal.ttl}).fetchone()
        self.claimed = time.monotonic() if row else 0.0
        return row is not None

    def _still_mine(self, conn: Any) -> None:
        """Before each delivery: refresh the lease once a third of the TTL has passed; a lease
        someone took over meanwhile (this process was frozen) stops the round."""
        if time.monotonic() - self.claimed > self.journal.ttl / 3 and not self._claim(conn):
            raise _Lost()

    def _loop(self) -> None:
        while not self.stop.is_set():
            conn = None
            try:
                conn = self.journal._fresh()
                while not self.stop.is_set():
                    if self._claim(conn):
                        self._deliver(conn)
                    else:
                        self.stop.wait(RETRY_LOCK)
            except Exception:  # the server went away: connect again, and claim again
                self.stop.wait(1.0)
            finally:
                if conn is not None:
                    try:
                        if self.claimed:
                            conn.execute(
                                "UPDATE lil_delivery SET holder = NULL WHERE id = 1 AND "
                                "holder = %s",
                                [self.me],
                            )
                        conn.close()
                    except Exception:
                        pass

    def _deliver(self, conn: Any) -> None:
        from letitloop.journal.postgres import _reads

        cur = conn.cursor()
        sql = _sql(cur)

        def atomic(fn: Any) -> Any:
            with conn.transaction():
                return fn()

        def events_after(after: int, limit: int) -> list[EventInfo]:
            return _reads.events(cur, after, None, limit)

        def head() -> int:
            return _reads.head(cur)

        outbox = Outbox(self.cfg, self.journal.journal_id, sql, atomic, events_after, head)
        try:
            while not self.stop.is_set():
                self._still_mine(conn)
                outbox.pump(between=lambda: self._still_mine(conn))
                self.stop.wait(PERIOD)
        except _Lost:
            return

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


class _Lost(Exception):
    """The delivery lease went to another client: this one stops delivering."""


def start_delivery(journal: PgJournal) -> Delivery | None:
    """Deliver notifications from this client (one at a time holds the lock), if configured."""
    try:
        cfg = load_config(Path.cwd())
    except LetItLoopError as exc:
        print(f"letitloop: notifications are off: {exc.message}", file=sys.stderr)
        return None
    return Delivery(journal, cfg) if cfg is not None else None
