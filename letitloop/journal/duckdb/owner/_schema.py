"""The journal's DuckDB schema, and opening a journal file with it.

Tables are projections a person can query with ``lil journal sql``:

    runs(run_id, workflow, run_key, epoch, status, tries, created, updated, args, entry, parent,
         result, error)
    steps(run_id, epoch, position, attempt, kind, name, fingerprint, status, started, ended,
          codec, output, size, error, next_position, resolution, resolved_by)
    events(seq, key, run_id, kind, epoch, position, attempt, name, ts, data)
    board(run_id, epoch, key, version, codec, output, size, tags, pinned, written_by, ts)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from letitloop.errors import ConfigError, JournalError, JournalVersionError
from letitloop.journal._analytics import VIEWS as ANALYTICS_VIEWS
from letitloop.journal.duckdb import _files

SCHEMA_VERSION = 1
DEFAULT_MEMORY_LIMIT = "2GB"  # DuckDB's own default is 80 % of the machine's memory
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS fold_state(id INTEGER PRIMARY KEY, folded_lsn UBIGINT NOT NULL);
INSERT INTO fold_state VALUES (0, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS runs(
  run_id VARCHAR PRIMARY KEY, workflow VARCHAR NOT NULL, run_key VARCHAR NOT NULL,
  epoch INTEGER NOT NULL, status VARCHAR NOT NULL, tries INTEGER NOT NULL,
  created DOUBLE NOT NULL, updated DOUBLE NOT NULL, args_codec VARCHAR, args BLOB,
  entry VARCHAR, parent VARCHAR, result_codec VARCHAR, result BLOB, error JSON,
  started_by VARCHAR, budget_micros BIGINT, budget_tokens BIGINT);
CREATE TABLE IF NOT EXISTS steps(
  run_id VARCHAR, epoch INTEGER, position INTEGER, attempt INTEGER, kind VARCHAR, name VARCHAR,
  fingerprint VARCHAR, status VARCHAR, started DOUBLE, ended DOUBLE, codec VARCHAR, output BLOB,
  size INTEGER, error JSON, next_position INTEGER, resolution VARCHAR, resolved_by VARCHAR,
  cost_micros BIGINT, tokens_in INTEGER, tokens_out INTEGER, model VARCHAR, cache VARCHAR,
  saved_micros BIGINT, PRIMARY KEY (run_id, epoch, position, attempt));
CREATE TABLE IF NOT EXISTS proposals(
  id VARCHAR PRIMARY KEY, path VARCHAR NOT NULL, target VARCHAR NOT NULL, code VARCHAR NOT NULL,
  reason VARCHAR, proposed_by VARCHAR, created DOUBLE NOT NULL, base VARCHAR, old VARCHAR,
  origin VARCHAR, state VARCHAR NOT NULL, decided_by VARCHAR, decided_at DOUBLE, note VARCHAR);
CREATE TABLE IF NOT EXISTS cache(
  key VARCHAR PRIMARY KEY, fn VARCHAR NOT NULL, created DOUBLE NOT NULL, expires DOUBLE,
  codec VARCHAR NOT NULL, output BLOB, cost_micros BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS steps_by_run ON steps(run_id);
CREATE TABLE IF NOT EXISTS events(
  key VARCHAR PRIMARY KEY, seq UBIGINT NOT NULL, run_id VARCHAR NOT NULL, kind VARCHAR NOT NULL,
  epoch INTEGER, position INTEGER, attempt INTEGER, name VARCHAR, ts DOUBLE NOT NULL, data JSON);
CREATE INDEX IF NOT EXISTS events_by_run ON events(run_id);
"""
# added after schema 1 shipped to developers: created on open when missing
ADDITIONS = """
CREATE TABLE IF NOT EXISTS quarantine(
  lsn UBIGINT PRIMARY KEY, run_id VARCHAR, kind VARCHAR, record BLOB NOT NULL,
  error VARCHAR NOT NULL, set_aside DOUBLE NOT NULL);
CREATE TABLE IF NOT EXISTS approvals(
  id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, epoch INTEGER NOT NULL,
  position INTEGER NOT NULL, attempt INTEGER NOT NULL, name VARCHAR NOT NULL, payload JSON,
  schema JSON, created DOUBLE NOT NULL, deadline DOUBLE, on_timeout VARCHAR NOT NULL,
  status VARCHAR NOT NULL, decided_by VARCHAR, decided_at DOUBLE, comment VARCHAR, edited JSON,
  timed_out BOOLEAN NOT NULL DEFAULT false);
ALTER TABLE steps ADD COLUMN IF NOT EXISTS shown VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS busy DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS try_started DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS last_active DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS result_shown VARCHAR;
CREATE TABLE IF NOT EXISTS board(
  run_id VARCHAR NOT NULL, epoch INTEGER NOT NULL, key VARCHAR NOT NULL, version INTEGER NOT NULL,
  codec VARCHAR NOT NULL, output BLOB NOT NULL, size INTEGER NOT NULL, tags JSON,
  pinned BOOLEAN NOT NULL, written_by VARCHAR NOT NULL, ts DOUBLE NOT NULL,
  PRIMARY KEY (run_id, epoch, key, version));
"""
# the tables with their epoch-seconds columns as TIMESTAMP WITH TIME ZONE, for SQL on times
# (``WHERE created > now() - INTERVAL 1 DAY``); rebuilt on open so they follow added columns
TIME_VIEWS = {
    "runs": ("created", "updated", "try_started", "last_active"),
    "steps": ("started", "ended"),
    "events": ("ts",),
    "approvals": ("created", "deadline", "decided_at"),
    "proposals": ("created", "decided_at"),
    "cache": ("created", "expires"),
    "board": ("ts",),
}
VIEWS = "".join(
    f"CREATE OR REPLACE VIEW v_{table} AS SELECT * REPLACE ("
    + ", ".join(f"to_timestamp({c}) AS {c}" for c in columns)
    + f") FROM {table};\n"
    for table, columns in TIME_VIEWS.items()
)


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    """Open (or create) the journal's DuckDB file, its schema checked, added to, and its views
    rebuilt; an error says plainly why a file cannot be the journal."""
    for name in (path, path.with_name(path.name + ".wal")):
        _files.check_existing(name)  # DuckDB opens them by name: a FIFO would block it
    try:
        # no SQL the owner runs may reach the file system (``lil journal sql`` runs people's
        # queries here: COPY ... TO, read_text() of the key, ATTACH): disabled for good
        # and its memory is bounded (a query building a huge value fails, saying so)
        db = duckdb.connect(
            str(path),
            config={"enable_external_access": False, "memory_limit": memory_limit()},
        )
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise JournalError(
                f"the journal {path} is held open by another program: {exc}",
                fix="close the program that opened the DuckDB file directly (use "
                "`lil journal sql` to query a journal instead)",
            ) from None
        raise _damaged(path, exc) from None
    except duckdb.Error as exc:  # not a DuckDB file, or a damaged one
        raise _damaged(path, exc) from None
    try:
        version = _meta(db, "schema_version")
    except duckdb.CatalogException:  # a new journal
        version = None
    if version is None:
        db.execute(SCHEMA)
        db.execute(
            "INSERT INTO meta VALUES ('schema_version', ?), ('journal_id', uuid()::VARCHAR)",
            [str(SCHEMA_VERSION)],
        )
    elif int(version) != SCHEMA_VERSION:
        raise JournalVersionError(
            f"journal {path} has schema version {version}; this letitloop reads version "
            f"{SCHEMA_VERSION}",
            fix="upgrade letitloop to the version that wrote this journal",
        )
    db.execute(ADDITIONS)
    db.execute(VIEWS)
    db.execute(ANALYTICS_VIEWS)  # step_facts, run_facts (journal._analytics)
    return db


def memory_limit() -> str:
    """What DuckDB may hold in memory in this owner (``LIL_OWNER_MEMORY_LIMIT``, e.g. ``2GB``);
    beyond it a query fails with DuckDB's out-of-memory error instead of growing the owner."""
    value = os.environ.get("LIL_OWNER_MEMORY_LIMIT", DEFAULT_MEMORY_LIMIT).strip()
    if not re.fullmatch(r"\d+(\.\d+)?\s*([KMGT]i?B|B)", value, re.IGNORECASE):
        raise ConfigError(
            f"LIL_OWNER_MEMORY_LIMIT={value!r} is not an amount of memory",
            fix="write it as a number and a unit, e.g. 2GB or 512MB",
        )
    return value


def _meta(db: duckdb.DuckDBPyConnection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return None if row is None else str(row[0])


def _damaged(path: Path, exc: BaseException) -> JournalError:
    """The error for a journal file DuckDB cannot open: said plainly, with what to do."""
    return JournalError(
        f"the journal file {path} cannot be opened by DuckDB: it is damaged or not a journal "
        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
        fix=f"restore {path} from a backup, or move it aside to start a new journal there; "
        "`lil journal doctor` shows what else it finds",
    )
