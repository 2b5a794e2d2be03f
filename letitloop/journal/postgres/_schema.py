"""The PostgreSQL journal's schema: where it lives (a named schema), versioned migrations.

A journal is one PostgreSQL schema (``letitloop`` unless the URL says ``?schema=NAME``), so
several journals (teams, tenants, test runs) can share a database. ``MIGRATIONS`` is an ordered
list; ``lil_migrations`` records each applied version. Opening a journal migrates an empty or
older schema by itself (under an advisory lock, so two processes starting at once migrate once)
and refuses a schema newer than this code, with the fix. Tables mirror the DuckDB store's, plus
the lease columns on ``runs`` (holder, token, heartbeat) and a commit-ordered ``events.seq``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from letitloop.errors import ConfigError, JournalVersionError
from letitloop.journal._analytics import VIEWS_1 as ANALYTICS_VIEWS_1
from letitloop.journal.postgres import _limits, _queues, _waits

DEFAULT_SCHEMA = "letitloop"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# events.seq = the writing transaction's id << SEQ_SHIFT | the record's ordinal in it: readers
# hand out only rows of transactions older than every running one, so no event is ever skipped
SEQ_SHIFT = 20
_MIGRATE_LOCK = _waits.MIGRATE_LOCK  # "lilm": the advisory lock that serializes migrations

MIGRATIONS: list[str] = [
    # 1: the journal as of letitloop's first PostgreSQL release
    """
CREATE TABLE meta(key text PRIMARY KEY, value text);
INSERT INTO meta VALUES ('journal_id', gen_random_uuid()::text);
CREATE TABLE runs(
  run_id text PRIMARY KEY, workflow text NOT NULL, run_key text NOT NULL, epoch int NOT NULL,
  status text NOT NULL, tries int NOT NULL, created float8 NOT NULL, updated float8 NOT NULL,
  args_codec text, args bytea, entry text, parent text, result_codec text, result bytea,
  error jsonb, started_by text, budget_micros bigint, budget_tokens bigint,
  rev bigint NOT NULL DEFAULT 0, holder text, holder_pid int, lease_token bigint NOT NULL DEFAULT 0,
  heartbeat timestamptz);
CREATE INDEX runs_by_updated ON runs(updated DESC);
CREATE TABLE steps(
  run_id text NOT NULL, epoch int NOT NULL, position int NOT NULL, attempt int NOT NULL,
  kind text, name text, fingerprint text, status text, started float8, ended float8, codec text,
  output bytea, size int, error jsonb, next_position int, resolution text, resolved_by text,
  cost_micros bigint, tokens_in int, tokens_out int, model text, cache text, saved_micros bigint,
  PRIMARY KEY (run_id, epoch, position, attempt));
CREATE TABLE events(
  seq bigint PRIMARY KEY, key text NOT NULL UNIQUE, run_id text NOT NULL, kind text NOT NULL,
  epoch int, position int, attempt int, name text, ts float8 NOT NULL, data jsonb);
CREATE INDEX events_by_run ON events(run_id, epoch);
CREATE TABLE approvals(
  id text PRIMARY KEY, run_id text NOT NULL, epoch int NOT NULL, position int NOT NULL,
  attempt int NOT NULL, name text NOT NULL, payload text, schema text, created float8 NOT NULL,
  deadline float8, on_timeout text NOT NULL, status text NOT NULL, decided_by text,
  decided_at float8, comment text, edited text, timed_out boolean NOT NULL DEFAULT false);
CREATE INDEX approvals_by_run ON approvals(run_id);
CREATE TABLE cache(
  key text PRIMARY KEY, fn text NOT NULL, created float8 NOT NULL, expires float8,
  codec text NOT NULL, output bytea, cost_micros bigint NOT NULL);
CREATE TABLE proposals(
  id text PRIMARY KEY, path text NOT NULL, target text NOT NULL, code text NOT NULL,
  reason text, proposed_by text, created float8 NOT NULL, base text, old text, origin text,
  state text NOT NULL, decided_by text, decided_at float8, note text);
CREATE TABLE lg_checkpoints(
  thread_id text NOT NULL, ns text NOT NULL, checkpoint_id text NOT NULL, parent_id text,
  ctype text NOT NULL, checkpoint bytea NOT NULL, mtype text NOT NULL, metadata bytea NOT NULL,
  meta jsonb, run_id text, created float8 NOT NULL, status text NOT NULL,
  PRIMARY KEY (thread_id, ns, checkpoint_id));
CREATE TABLE lg_writes(
  thread_id text NOT NULL, ns text NOT NULL, checkpoint_id text NOT NULL, task_id text NOT NULL,
  idx int NOT NULL, channel text NOT NULL, vtype text NOT NULL, value bytea NOT NULL,
  task_path text NOT NULL, PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx));
""",
    # 2: the one-round-trip write of a run this process holds: check that nobody wrote to the
    # run since this process read it (rev) and that its lease is still this process's (token)
    """
CREATE FUNCTION lil_fence(p_run text, p_rev bigint, p_holder text, p_token bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  r bigint;
BEGIN
  UPDATE runs SET rev = rev + 1, heartbeat = now()
   WHERE run_id = p_run AND rev = p_rev AND holder = p_holder AND lease_token = p_token
   RETURNING rev INTO r;
  IF r IS NULL THEN
    RAISE EXCEPTION 'run % changed since this process read it', p_run USING ERRCODE = 'LIL01';
  END IF;
  RETURN r;
END $$;
""",
    # 3: a pickled output's short repr, taken when it was written (previews never unpickle)
    """
ALTER TABLE steps ADD COLUMN shown text;
ALTER TABLE runs ADD COLUMN result_shown text;
""",
    # 4: the typed analytics views step_facts and run_facts (docs/analytics.md)
    ANALYTICS_VIEWS_1,
    # 5: shared rate-limit buckets and the notification outbox (see postgres._limits)
    _limits.MIGRATION,
    # 6: the runs' blackboards (letitloop.memory): one row per version of a key
    """
CREATE TABLE board(
  run_id text NOT NULL, epoch int NOT NULL, key text NOT NULL, version int NOT NULL,
  codec text NOT NULL, output bytea NOT NULL, size int NOT NULL, tags text,
  pinned boolean NOT NULL, written_by text NOT NULL, ts double precision NOT NULL,
  PRIMARY KEY (run_id, epoch, key, version));
""",
    # 7: queued runs and their workers (see postgres._queues)
    _queues.MIGRATION,
    # 8: run gates and the delivery lease. open_run serializes a run's lease changes on a row
    # of run_gates (its run id's hash picks the row), locked FOR NO KEY UPDATE, and the client
    # that delivers notifications holds the one row of lil_delivery: both need UPDATE on the
    # table, so a read-only role cannot hold them, as it could the advisory locks used before
    # (see postgres._waits and postgres._limits)
    f"""
CREATE TABLE IF NOT EXISTS run_gates(slot int PRIMARY KEY);
INSERT INTO run_gates SELECT generate_series(0, {_waits.GATES - 1}) ON CONFLICT DO NOTHING;
"""
    + _limits.DELIVERY_DDL,
]
VERSION = len(MIGRATIONS)
STALE = "LIL01"  # the SQLSTATE lil_fence raises


@dataclass(frozen=True)
class PgLocation:
    """A Postgres journal's address: the libpq URL to connect with and the schema it uses."""

    dsn: str  # without our own query parameters
    schema: str
    url: str  # as the user wrote it (shown in messages, the journal's ``location``)

    @property
    def channel(self) -> str:
        """The LISTEN/NOTIFY channel of this journal (one per schema)."""
        return f"lil_events_{self.schema}"


def is_postgres_url(text: str) -> bool:
    return text.startswith(("postgresql://", "postgres://"))


def parse_location(url: str) -> PgLocation:
    """Split ``postgresql://...?schema=NAME`` into libpq's URL and the schema name."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    kept: list[tuple[str, str]] = []
    for key, value in query:
        if key == "schema":
            schema = value
        else:
            kept.append((key, value))
    if not _NAME.match(schema):
        raise ConfigError(
            f"journal schema {schema!r} in {url!r} is not a plain PostgreSQL name",
            fix="use lower-case letters, digits and underscores, e.g. ?schema=team_a",
        )
    dsn = urlunsplit(parts._replace(query=urlencode(kept)))
    return PgLocation(dsn=dsn, schema=schema, url=url)


def current_version(conn: Any, schema: str) -> int:
    """The schema's applied migration version (0: no journal there yet)."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", [f'"{schema}".lil_migrations']
    ).fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute(f'SELECT coalesce(max(version), 0) FROM "{schema}".lil_migrations')
    return int((found.fetchone() or [0])[0])


def migrate(conn: Any, location: PgLocation, *, by: str = "letitloop") -> tuple[int, int]:
    """Bring the schema to ``VERSION``; returns (version before, version after).

    ``conn`` must be in autocommit mode; each migration runs in its own transaction under an
    advisory lock, so concurrent first uses migrate exactly once. Its waits are bounded by the
    connection's ``lock_timeout`` (``postgres._waits``); its statements are not.
    """
    schema = location.schema
    before = current_version(conn, schema)
    check_not_newer(before, location)
    if before == VERSION:
        return before, before
    with conn.transaction():
        conn.execute("SET LOCAL statement_timeout = 0")  # a migration may rebuild a big table
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATE_LOCK])
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(
            f'CREATE TABLE IF NOT EXISTS "{schema}".lil_migrations(version int PRIMARY KEY, '
            "applied timestamptz NOT NULL DEFAULT now(), applied_by text)"
        )
        start = current_version(conn, schema)
        check_not_newer(start, location)
        conn.execute(f'SET LOCAL search_path TO "{schema}"')
        for version in range(start + 1, VERSION + 1):
            conn.execute(MIGRATIONS[version - 1].encode())
            conn.execute(
                "INSERT INTO lil_migrations(version, applied_by) VALUES (%s, %s)", [version, by]
            )
    return before, VERSION


def check_not_newer(version: int, location: PgLocation) -> None:
    if version > VERSION:
        raise JournalVersionError(
            f"the journal at {location.url} (schema {location.schema!r}) has schema version "
            f"{version}; this letitloop knows versions up to {VERSION}",
            fix="upgrade letitloop (pip install -U 'letitloop[postgres]') in every process that "
            "uses this journal; never downgrade a migrated journal",
        )
