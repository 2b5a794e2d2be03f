"""The DuckDB store behind the owner: schema, folding log records into tables, and queries.

Only the owner process imports this module (and duckdb), and only its database thread uses the
connection. Records are folded in batches: each batch and the log position it reaches commit in
one transaction, so after a crash exactly the unfolded suffix of the log is replayed. Tables are
projections a person can query with ``lil journal sql``:

    runs(run_id, workflow, run_key, epoch, status, tries, created, updated, args, entry, parent,
         result, error)
    steps(run_id, epoch, position, attempt, kind, name, fingerprint, status, started, ended,
          codec, output, size, error, next_position, resolution, resolved_by)
    events(seq, key, run_id, kind, epoch, position, attempt, name, ts, data)
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from letitloop.errors import ConfigError, JournalError, JournalVersionError
from letitloop.journal._analytics import VIEWS as ANALYTICS_VIEWS
from letitloop.journal._approvals import COLUMNS as APPROVAL_COLS
from letitloop.journal._preview import preview
from letitloop.journal._records import (
    CHECKPOINT_KINDS,
    Record,
    natural_key,
    validate,
    without_payload,
)
from letitloop.journal.duckdb._checkpoint_store import CheckpointStore

SCHEMA_VERSION = 1
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
}
VIEWS = "".join(
    f"CREATE OR REPLACE VIEW v_{table} AS SELECT * REPLACE ("
    + ", ".join(f"to_timestamp({c}) AS {c}" for c in columns)
    + f") FROM {table};\n"
    for table, columns in TIME_VIEWS.items()
)

_STEP_COLS = (
    "run_id epoch position attempt kind name fingerprint status started ended codec output size "
    "error next_position resolution resolved_by cost_micros tokens_in tokens_out model cache "
    "saved_micros shown"
).split()
_KEY_COLS = ("run_id", "epoch", "position", "attempt")
_UPSERT_STEPS = (
    f"INSERT INTO steps SELECT {', '.join(f'unnest(${i + 1})' for i in range(len(_STEP_COLS)))} "
    "ON CONFLICT DO UPDATE SET "
    "status = CASE WHEN excluded.status IS NULL OR (excluded.status = 'started' AND "
    "steps.status <> 'started') THEN steps.status ELSE excluded.status END, "
    + ", ".join(
        f"{c} = COALESCE(excluded.{c}, steps.{c})"
        for c in _STEP_COLS
        if c not in _KEY_COLS and c != "status"
    )
)
_EVENT_COLS = "key seq run_id kind epoch position attempt name ts data".split()
_INSERT_EVENTS = (
    f"INSERT INTO events SELECT {', '.join(f'unnest(${i + 1})' for i in range(len(_EVENT_COLS)))}"
    " ON CONFLICT DO NOTHING"
)
_BATCH = 5000
# records a run's own process writes: the newest one is where its current try has got to
_ACTIVE = frozenset({"step", "ok", "err", "rewind", "done", "fail", "suspend"})


SQL_ROWS = 10_000  # rows ``lil journal sql`` returns at most (it says when it stopped)
SQL_BYTES = 32 << 20  # text and bytes it returns at most
SQL_SECONDS = 30.0  # a query running longer is interrupted


class Bad:
    """A log frame that is not a valid record: its bytes and why, for the quarantine."""

    def __init__(self, payload: bytes, error: str, rec: dict[str, Any] | None) -> None:
        self.payload, self.error, self.rec = payload, error, rec


def _damaged(path: Path, exc: BaseException) -> JournalError:
    """The error for a journal file DuckDB cannot open: said plainly, with what to do."""
    return JournalError(
        f"the journal file {path} cannot be opened by DuckDB: it is damaged or not a journal "
        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
        fix=f"restore {path} from a backup, or move it aside to start a new journal there; "
        "`lil journal doctor` shows what else it finds",
    )


def _fatal(exc: BaseException) -> bool:
    """Errors of the database or the machine (disk, I/O, a failed rollback, memory), not of one
    record: the owner must stop on these, so that a fresh owner replays the log; a record is
    never quarantined for them."""
    from letitloop.journal.duckdb._log import disk_full  # a full disk is not one record's fault

    fatal: tuple[type[BaseException], ...] = (duckdb.IOException, duckdb.FatalException)
    fatal += (duckdb.InternalException, duckdb.TransactionException, duckdb.OutOfMemoryException)
    fatal += (MemoryError, OSError)
    return isinstance(exc, fatal) or disk_full(exc) is not None


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


_RUN_COLS = "run_id wf rkey epoch tries ts args_codec args entry parent started_by".split()
_INSERT_RUNS = (
    "INSERT INTO runs (run_id, workflow, run_key, epoch, status, tries, created, updated, "
    "args_codec, args, entry, parent, started_by, busy, try_started, last_active) SELECT "
    "r.run_id, r.wf, r.rkey, r.epoch, 'running', r.tries, r.ts, r.ts, r.args_codec, r.args, "
    "r.entry, r.parent, r.started_by, 0, r.ts, r.ts FROM (SELECT "
    + ", ".join(f"unnest(${i + 1}) AS {c}" for i, c in enumerate(_RUN_COLS))
    + ") r ON CONFLICT DO UPDATE SET epoch = excluded.epoch, "
    "status = 'running', tries = greatest(runs.tries, excluded.tries), "
    "updated = excluded.updated, "
    "args_codec = excluded.args_codec, args = excluded.args, entry = excluded.entry,"
    " parent = excluded.parent, error = NULL, started_by = excluded.started_by, "
    # a run's duration is the sum of its tries: the one that ends here is added
    "busy = coalesce(runs.busy, 0) + coalesce(runs.last_active - runs.try_started, 0),"
    " try_started = excluded.try_started, last_active = excluded.last_active"
)
_DONE_RUNS = (
    "UPDATE runs SET status = 'completed', result_codec = t.codec, result = t.out, error = NULL,"
    " updated = t.ts, result_shown = t.shown FROM (SELECT unnest($1) AS run_id, unnest($2) AS "
    "codec, unnest($3::BLOB[]) AS out, unnest($4) AS ts, unnest($5) AS shown) t "
    "WHERE runs.run_id = t.run_id"
)
_FAILED_RUNS = (
    "UPDATE runs SET status = 'failed', error = t.error, updated = t.ts FROM (SELECT "
    "unnest($1) AS run_id, unnest($2) AS error, unnest($3) AS ts) t WHERE runs.run_id = t.run_id"
)


class _Heads:
    """Run starts (``run``) and ends (``done``, ``fail``) of one fold, written in a statement per
    kind instead of one each (a map's thousand child runs fold in milliseconds, not seconds).
    Starts are written before ends, so a run may have one of each waiting; any other record of
    a waiting run flushes first, so each run's records keep their order."""

    def __init__(self, db: duckdb.DuckDBPyConnection) -> None:
        self.db = db
        self.starts: list[Record] = []
        self.dones: list[Record] = []
        self.fails: list[Record] = []
        self.runs: dict[str, str] = {}  # run id -> the kind of its last waiting record

    def add(self, rec: Record) -> bool:
        """Take a ``run``, ``done`` or ``fail`` record (False: the caller folds it alone)."""
        k, run_id = rec["k"], rec["run"]
        waiting = self.runs.get(run_id)
        if k not in ("run", "done", "fail"):
            if waiting is not None:
                self.flush()
            return False
        if waiting is not None and not (waiting == "run" and k != "run"):
            self.flush()
        {"run": self.starts, "done": self.dones, "fail": self.fails}[k].append(rec)
        self.runs[run_id] = k
        return True

    def flush(self) -> None:
        if self.starts:
            cols: list[list[Any]] = [[] for _ in _RUN_COLS]
            for rec in self.starts:
                args = rec.get("args") or [None, None]
                row = [rec["run"], rec["wf"], rec["key"], rec["epoch"], rec["try"], rec["ts"]]
                row += [args[0], args[1], rec["entry"], rec["parent"], rec["by"]]
                for col, value in zip(cols, row, strict=True):
                    col.append(value)
            self.db.execute(_INSERT_RUNS, cols)
        if self.dones:
            done = self.dones
            self.db.execute(
                _DONE_RUNS,
                [
                    [r["run"] for r in done],
                    [r["codec"] for r in done],
                    [r["out"] for r in done],
                    [r["ts"] for r in done],
                    [r.get("shown") for r in done],
                ],
            )
        if self.fails:
            fails = self.fails
            self.db.execute(
                _FAILED_RUNS,
                [
                    [r["run"] for r in fails],
                    [_json(r["err"]) for r in fails],
                    [r["ts"] for r in fails],
                ],
            )
        self.starts, self.dones, self.fails, self.runs = [], [], [], {}


class Store:
    """The owner's DuckDB connection and everything it does with it."""

    def __init__(self, path: Path) -> None:
        try:
            # no SQL the owner runs may reach the file system (``lil journal sql`` runs people's
            # queries here: COPY ... TO, read_text() of the key, ATTACH): disabled for good
            self.db = duckdb.connect(str(path), config={"enable_external_access": False})
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
            version = self.meta("schema_version")
        except duckdb.CatalogException:  # a new journal
            version = None
        if version is None:
            self.db.execute(SCHEMA)
            self.db.execute(
                "INSERT INTO meta VALUES ('schema_version', ?), ('journal_id', uuid()::VARCHAR)",
                [str(SCHEMA_VERSION)],
            )
        elif int(version) != SCHEMA_VERSION:
            raise JournalVersionError(
                f"journal {path} has schema version {version}; this letitloop reads version "
                f"{SCHEMA_VERSION}",
                fix="upgrade letitloop to the version that wrote this journal",
            )
        self.db.execute(ADDITIONS)
        self.db.execute(VIEWS)
        self.db.execute(ANALYTICS_VIEWS)  # step_facts, run_facts (journal._analytics)
        self.lg = CheckpointStore(self.db)  # graph checkpoints: their tables are added on open
        self.journal_id: str = self.meta("journal_id") or ""
        self.schema_version = SCHEMA_VERSION
        row = self.db.execute("SELECT folded_lsn FROM fold_state").fetchone()
        self.folded_lsn: int = row[0] if row else 0
        self.quarantined = 0  # records set aside since this owner started

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def known_runs(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT run_id FROM runs").fetchall()}

    # -- folding ------------------------------------------------------------------------------

    def decode(self, items: Sequence[tuple[int, bytes]]) -> list[tuple[int, Record | Bad]]:
        """Log frames as records; one that does not unpack or validate (written by another
        version, or damaged) becomes a ``Bad`` for the fold to quarantine, never a crash."""
        import msgpack

        out: list[tuple[int, Record | Bad]] = []
        for lsn, payload in items:
            rec: Any = None
            try:
                rec = msgpack.unpackb(payload, raw=False)
                out.append((lsn, validate(rec)))
            except Exception as exc:  # any reason at all: the record is set aside
                rec = rec if isinstance(rec, dict) else None
                out.append((lsn, Bad(payload, f"{type(exc).__name__}: {exc}", rec)))
        return out

    def fold(self, items: Sequence[tuple[int, Record | Bad]]) -> None:
        """Project records into the tables and advance the folded position, atomically.

        A batch that fails is folded again one record at a time, and a record that fails alone
        goes to the ``quarantine`` table (``lil journal doctor`` shows and resolves it): one
        record the owner cannot fold must never stop it, nor every owner after it."""
        good: list[tuple[int, Record]] = []
        for lsn, rec in items:
            if isinstance(rec, Bad):
                self._fold_batches(good)
                good = []
                self._quarantine(lsn, rec.rec, rec.payload, rec.error)
            else:
                good.append((lsn, rec))
        self._fold_batches(good)

    def _fold_batches(self, items: Sequence[tuple[int, Record]]) -> None:
        for i in range(0, len(items), _BATCH):
            part = items[i : i + _BATCH]
            try:
                self._fold_part(part)
            except Exception as exc:
                if _fatal(exc):
                    raise
                for one in part:  # fold them one by one to find what cannot be folded
                    try:
                        self._fold_part([one])
                    except Exception as exc1:
                        if _fatal(exc1):
                            raise
                        self._quarantine(one[0], one[1], None, f"{type(exc1).__name__}: {exc1}")

    def _quarantine(self, lsn: int, rec: Record | None, payload: bytes | None, why: str) -> None:
        """Set one record aside (with its position in the log) and move the fold past it."""
        import time

        import msgpack

        if payload is None:
            payload = msgpack.packb(rec, use_bin_type=True)
        run_id = rec.get("run") if isinstance(rec, dict) else None
        kind = rec.get("k") if isinstance(rec, dict) else None
        run_id = run_id if isinstance(run_id, str) else None
        kind = kind if isinstance(kind, str) else None
        self.db.execute("BEGIN")
        try:
            self.db.execute(
                "INSERT INTO quarantine VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [lsn, run_id, kind, payload, why[:2000], time.time()],
            )
            self.db.execute("UPDATE fold_state SET folded_lsn = greatest(folded_lsn, ?)", [lsn])
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.folded_lsn = max(self.folded_lsn, lsn)
        self.quarantined += 1
        print(
            f"quarantined the record at log position {lsn} (kind {kind!r}, run {run_id!r}): "
            f"{why}; see `lil journal doctor`",
            file=sys.stderr,
            flush=True,
        )

    def quarantine_rows(self) -> list[list[Any]]:
        """The set-aside records: lsn, run, kind, why, when, size."""
        rows = self.db.execute(
            "SELECT lsn, run_id, kind, error, set_aside, octet_length(record) FROM quarantine "
            "ORDER BY lsn"
        ).fetchall()
        return [list(r) for r in rows]

    def resolve_quarantine(self, lsn: int | None, action: str) -> dict[str, Any]:
        """``drop``: forget a set-aside record (every one: lsn None). ``retry``: fold it again
        (after an upgrade that can); it leaves the quarantine only if it folds now."""
        import msgpack

        if action not in ("drop", "retry"):
            raise JournalError(f"a quarantined record is dropped or retried, not {action!r}")
        rows = self.db.execute(
            "SELECT lsn, record FROM quarantine WHERE ? IS NULL OR lsn = ? ORDER BY lsn",
            [lsn, lsn],
        ).fetchall()
        if lsn is not None and not rows:
            raise JournalError(
                f"no quarantined record at log position {lsn}",
                fix="list them with `lil journal doctor`",
            )
        resolved, failed = [], []
        for row_lsn, payload in rows:
            if action == "retry":
                try:
                    rec = validate(msgpack.unpackb(payload, raw=False))
                    self._fold_part([(row_lsn, rec)], advance=False)
                except Exception as exc:
                    if _fatal(exc):
                        raise
                    failed.append([row_lsn, f"{type(exc).__name__}: {exc}"])
                    continue
            self.db.execute("DELETE FROM quarantine WHERE lsn = ?", [row_lsn])
            resolved.append(row_lsn)
        return {"resolved": resolved, "failed": failed}

    def _fold_part(self, part: Sequence[tuple[int, Record]], advance: bool = True) -> None:
        """Fold records in one transaction (advancing the folded position unless retrying)."""
        if part:
            self.db.execute("BEGIN")
            try:
                self._fold_events(part)
                self._fold_approvals([r for _, r in part if r.get("ask") or r["k"] == "answer"])
                steps: list[Record] = []
                for _, rec in part:  # a rewind applies to the step records before it only
                    if rec["k"] == "rewind":
                        self._fold_steps(steps)
                        steps = []
                        self._fold_rewind(rec)
                    elif "pos" in rec and rec["k"] != "answer":
                        steps.append(rec)
                self._fold_steps(steps)
                self.lg.fold([r for _, r in part if r["k"] in CHECKPOINT_KINDS])
                active: dict[str, float] = {}  # the newest record its process wrote, by run
                heads = _Heads(self.db)  # run starts and completions, folded in bulk
                for _, rec in part:
                    if rec["k"] in _ACTIVE and rec["run"]:
                        active[rec["run"]] = max(active.get(rec["run"], 0.0), rec["ts"])
                    if "pos" not in rec:
                        if rec["k"] == "run" and rec["run"] in active:  # the try before it
                            heads.flush()
                            self._touch_runs([], {rec["run"]: active.pop(rec["run"])})
                        if not heads.add(rec):
                            self._fold_run(rec)
                heads.flush()
                self._touch_runs(part, active)
                if advance:
                    self.db.execute(
                        "UPDATE fold_state SET folded_lsn = greatest(folded_lsn, ?)",
                        [part[-1][0]],
                    )
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            if advance:
                self.folded_lsn = max(self.folded_lsn, part[-1][0])

    def _touch_runs(self, part: Sequence[tuple[int, Record]], active: dict[str, float]) -> None:
        """A run's ``updated`` moves with every step record, not only with its header's; its
        ``last_active`` with what its own process wrote (the end of its current try)."""
        latest: dict[str, float] = {}
        for _, rec in part:
            if "pos" in rec and rec["run"]:
                latest[rec["run"]] = max(latest.get(rec["run"], 0.0), rec["ts"])
        for column, times in (("updated", latest), ("last_active", active)):
            if times:
                self.db.execute(
                    f"UPDATE runs SET {column} = greatest(runs.{column}, t.ts) FROM (SELECT "
                    "unnest($1::VARCHAR[]) AS run_id, unnest($2::DOUBLE[]) AS ts) t "
                    "WHERE runs.run_id = t.run_id",
                    [list(times), list(times.values())],
                )

    def _fold_events(self, part: Sequence[tuple[int, Record]]) -> None:
        cols: list[list[Any]] = [[] for _ in _EVENT_COLS]
        for lsn, rec in part:
            row = (
                natural_key(rec),
                lsn,
                rec["run"],
                rec["k"],
                rec.get("epoch"),
                rec.get("pos"),
                rec.get("att"),
                rec.get("name"),
                rec["ts"],
                _json(without_payload(rec)),
            )
            for col, value in zip(cols, row, strict=True):
                col.append(value)
        self.db.execute(_INSERT_EVENTS, cols)

    def _fold_approvals(self, recs: Sequence[Record]) -> None:
        for rec in recs:
            if rec["k"] == "step":
                a = rec["ask"]
                self.db.execute(
                    "INSERT INTO approvals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', "
                    "NULL, NULL, NULL, NULL, false) ON CONFLICT DO NOTHING",
                    [a["id"], rec["run"], rec["epoch"], rec["pos"], rec["att"], rec["name"]]
                    + [a["payload"], a["schema"], rec["ts"], a["deadline"], a["on_timeout"]],
                )
            else:
                self.db.execute(
                    "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, comment = ?,"
                    " edited = ?, timed_out = ? WHERE id = ?",
                    ["approved" if rec["ok"] else "rejected", rec["by"], rec["ts"]]
                    + [rec["comment"], rec["payload"], rec["timeout"], rec["id"]],
                )

    def _fold_rewind(self, rec: Record) -> None:
        where = "WHERE run_id = ? AND epoch = ? AND position >= ?"
        key = [rec["run"], rec["epoch"], rec["pos"]]
        self.db.execute(f"UPDATE steps SET status = 'superseded' {where}", key)
        self.db.execute(  # approvals asked before the rewind (later ones have new ids)
            f"UPDATE approvals SET status = 'cancelled' {where} AND status = 'pending' "
            "AND created <= ?",
            [*key, rec["ts"]],
        )

    def _fold_steps(self, recs: Sequence[Record]) -> None:
        merged: dict[tuple[str, int, int, int], dict[str, Any]] = {}
        for rec in recs:
            row = merged.setdefault((rec["run"], rec["epoch"], rec["pos"], rec["att"]), {})
            k = rec["k"]
            if k == "resolve":
                row.update(resolution=rec["res"], resolved_by=rec["by"])
                continue
            row.update(kind=rec["kind"], name=rec["name"], fingerprint=rec["fp"])
            if k == "step":
                row.setdefault("status", "started")
                row["started"] = rec["ts"]
            else:
                out = rec.get("out")
                row.update(
                    status="completed" if k == "ok" else "failed",
                    ended=rec["ts"],
                    codec=rec.get("codec"),
                    output=out,
                    size=len(out) if out is not None else 0,
                    error=_json(rec.get("err")),
                    next_position=rec.get("next"),
                    shown=rec.get("shown"),  # a pickled output's repr, taken when written
                )
                if cache := rec.get("cache"):
                    row.update(cache="hit" if cache["hit"] else "miss", saved_micros=cache["saved"])
                if cost := rec.get("cost"):
                    row.update(
                        cost_micros=cost["usd_micros"],
                        tokens_in=cost["in"],
                        tokens_out=cost["out"],
                        model=cost["model"],
                    )
        if not merged:
            return
        cols: list[list[Any]] = [[] for _ in _STEP_COLS]
        for key, row in merged.items():
            values = dict(zip(_KEY_COLS, key, strict=True)) | row
            for col, name in zip(cols, _STEP_COLS, strict=True):
                col.append(values.get(name))
        self.db.execute(_UPSERT_STEPS, cols)

    def _fold_run(self, rec: Record) -> None:
        k, run_id, ts = rec["k"], rec["run"], rec["ts"]
        if k in CHECKPOINT_KINDS:
            return  # folded in bulk by journal.duckdb._checkpoint_store
        if k == "run":
            args = rec.get("args") or [None, None]
            self.db.execute(
                "INSERT INTO runs (run_id, workflow, run_key, epoch, status, tries, created, "
                "updated, args_codec, args, entry, parent, started_by, busy, try_started, "
                "last_active) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?) "
                "ON CONFLICT DO UPDATE SET epoch = excluded.epoch, "
                "status = 'running', tries = greatest(runs.tries, excluded.tries), "
                "updated = excluded.updated, "
                "args_codec = excluded.args_codec, args = excluded.args, entry = excluded.entry,"
                " parent = excluded.parent, error = NULL, started_by = excluded.started_by, "
                # a run's duration is the sum of its tries: the one that ends here is added
                "busy = coalesce(runs.busy, 0) + coalesce(runs.last_active - runs.try_started, 0),"
                " try_started = excluded.try_started, last_active = excluded.last_active",
                [run_id, rec["wf"], rec["key"], rec["epoch"], rec["try"], ts, ts, args[0]]
                + [args[1], rec["entry"], rec["parent"], rec["by"], ts, ts],
            )
        elif k == "done":
            self.db.execute(
                "UPDATE runs SET status = 'completed', result_codec = ?, result = ?, error = NULL,"
                " updated = ?, result_shown = ? WHERE run_id = ?",
                [rec["codec"], rec["out"], ts, rec.get("shown"), run_id],
            )
        elif k == "fail":
            self.db.execute(
                "UPDATE runs SET status = 'failed', error = ?, updated = ? WHERE run_id = ?",
                [_json(rec["err"]), ts, run_id],
            )
        elif k == "budget":
            self.db.execute(
                "UPDATE runs SET budget_micros = ?, budget_tokens = ?, updated = ? "
                "WHERE run_id = ?",
                [rec["usd_micros"], rec["tokens"], ts, run_id],
            )
        elif k == "cancel":
            message = f"cancelled by {rec['by']}" + (f": {rec['reason']}" if rec["reason"] else "")
            self.db.execute(
                "UPDATE runs SET status = 'cancelled', error = ?, updated = ? WHERE run_id = ?",
                [_json({"type": "letitloop.Cancelled", "message": message}), ts, run_id],
            )
            self.db.execute(
                "UPDATE approvals SET status = 'cancelled' WHERE run_id = ? AND status = 'pending'",
                [run_id],
            )
        elif k == "suspend":
            self.db.execute(
                "UPDATE runs SET status = 'suspended', error = ?, updated = ? WHERE run_id = ?",
                [_json({"type": "letitloop.Suspended", "message": rec["reason"]}), ts, run_id],
            )
        elif k == "propose":
            self.db.execute(
                "INSERT INTO proposals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, NULL,"
                " NULL) ON CONFLICT DO NOTHING",
                [rec["id"], rec["path"], rec["target"], rec["code"], rec["reason"], rec["by"], ts]
                + [rec["base"], rec["old"], rec["origin"]],
            )
        elif k == "decide":
            self.db.execute(
                "UPDATE proposals SET state = ?, decided_by = ?, decided_at = ?, note = ? "
                "WHERE id = ?",
                [rec["state"], rec["by"], ts, rec["note"], rec["id"]],
            )
        elif k == "cache":
            self.db.execute(
                "INSERT OR REPLACE INTO cache VALUES (?, ?, ?, ?, ?, ?, ?)",
                [rec["key"], rec["fn"], ts, rec["expires"], rec["codec"], rec["out"], rec["cost"]],
            )
        elif k == "uncache":
            self.db.execute("DELETE FROM cache WHERE ? IS NULL OR fn = ?", [rec["fn"], rec["fn"]])
        elif k == "reset":
            self.db.execute(
                "UPDATE runs SET status = 'reset', epoch = ?, tries = 0, result = NULL, "
                "result_codec = NULL, error = NULL, updated = ?, busy = 0, try_started = NULL, "
                "last_active = NULL WHERE run_id = ?",
                [rec["epoch"], ts, run_id],
            )
            self.db.execute(
                "UPDATE approvals SET status = 'cancelled' WHERE run_id = ? AND status = 'pending'",
                [run_id],
            )

    # -- reads --------------------------------------------------------------------------------

    def load_run(self, run_id: str) -> dict[str, Any] | None:
        """Everything the live state needs to hold a run: header, latest attempts, keys."""
        row = self.db.execute(
            "SELECT workflow, run_key, epoch, status, tries, created, updated, args_codec, args,"
            " entry, parent, result_codec, result, error, started_by, budget_micros, budget_tokens,"
            " (SELECT coalesce(sum(cost_micros), 0) FROM steps s WHERE s.run_id = runs.run_id AND "
            "s.epoch = runs.epoch), (SELECT coalesce(sum(tokens_in::BIGINT + tokens_out), 0) FROM "
            "steps s WHERE s.run_id = runs.run_id AND s.epoch = runs.epoch) "
            "FROM runs WHERE run_id = ?",
            [run_id],
        ).fetchone()
        if row is None:
            return None
        wf, key, epoch, status, tries, created, updated, a_codec, args, entry, parent = row[:11]
        r_codec, result, error, started_by, b_micros, b_tokens, cost, tokens = row[11:]
        steps = self.db.execute(
            "SELECT position, attempt, kind, name, fingerprint, status, codec, "
            "CASE WHEN size <= 65536 THEN output END, size > 65536, "
            # a started step attempt carries the previous failure forward, as the live state does
            "CASE WHEN status = 'started' AND kind = 'step' THEN coalesce(error, lag(error) "
            "OVER (PARTITION BY position ORDER BY attempt)) ELSE error END, next_position, "
            "resolution, resolved_by FROM steps WHERE run_id = ? AND epoch = ? "
            "QUALIFY row_number() OVER (PARTITION BY position ORDER BY attempt DESC) = 1",
            [run_id, epoch],
        ).fetchall()
        keys = self.db.execute(
            "SELECT key FROM events WHERE run_id = ? AND epoch = ?", [run_id, epoch]
        ).fetchall()
        asks = {
            (r[0], r[-1]): r[1:]
            for r in self.db.execute(
                "SELECT position, id, payload, schema, deadline, on_timeout, status, decided_by, "
                "decided_at, comment, edited, timed_out, attempt FROM approvals WHERE run_id = ? "
                "AND epoch = ?",
                [run_id, epoch],
            ).fetchall()
        }
        return {
            "run": run_id,
            "wf": wf,
            "key": key,
            "epoch": epoch,
            "status": status,
            "try": tries,
            "created": created,
            "updated": updated,
            "args": [a_codec, args] if a_codec else None,
            "entry": entry,
            "parent": parent,
            "result": [r_codec, result] if r_codec else None,
            "error": json.loads(error) if error else None,
            "started_by": started_by,
            "cost": int(cost),
            "tokens": int(tokens),
            "budget": [b_micros, b_tokens]
            if b_micros is not None or b_tokens is not None
            else None,
            "keys": [k[0] for k in keys],
            "steps": [
                {
                    "pos": s[0],
                    "att": s[1],
                    "kind": s[2],
                    "name": s[3],
                    "fp": s[4],
                    "status": s[5],
                    "codec": s[6],
                    "out": s[7],
                    "big": bool(s[8]),
                    "err": json.loads(s[9]) if s[9] else None,
                    "next": s[10],
                    "res": s[11],
                    "res_by": s[12],
                }
                | _approval_fields(run_id, epoch, s[0], asks.get((s[0], s[1])))
                for s in steps
            ],
        }

    def approvals(self, status: str | None, run_id: str | None, limit: int) -> list[list[Any]]:
        rows = self.db.execute(
            f"SELECT {', '.join(APPROVAL_COLS)} FROM approvals WHERE (? IS NULL OR status = ?) "
            "AND (? IS NULL OR run_id = ?) ORDER BY created DESC LIMIT ?",
            [status, status, run_id, run_id, limit],
        ).fetchall()
        return [list(r) for r in rows]

    def output(self, run_id: str, epoch: int, position: int, attempt: int) -> list[Any]:
        row = self.db.execute(
            "SELECT codec, output FROM steps WHERE run_id = ? AND epoch = ? AND position = ? "
            "AND attempt = ?",
            [run_id, epoch, position, attempt],
        ).fetchone()
        if row is None or row[0] is None:
            raise JournalError(
                f"no output for run {run_id} epoch {epoch} position {position} attempt {attempt}",
                run_id=run_id,
                position=position,
            )
        return [row[0], row[1]]

    def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        limit: int,
        held: list[str],
        run_id: str | None = None,
    ) -> list[dict[str, Any]]:
        # the runs are chosen (filter, order, limit) before their steps are summed, so a listing
        # of the newest runs, or of one run, never aggregates the whole steps table
        rows = self.db.execute(
            "WITH r AS (SELECT run_id, workflow, run_key, status, CASE WHEN status = 'running' "
            "AND NOT list_contains($held, run_id) THEN 'interrupted' ELSE status END AS st, "
            "epoch, tries, created, updated, parent, error, budget_micros, budget_tokens, "
            "coalesce(busy, 0) + coalesce(last_active - try_started, 0) AS active FROM runs "
            "WHERE ($run IS NULL OR run_id = $run) AND ($workflow IS NULL OR workflow = "
            "$workflow) AND ($status IS NULL OR st = $status) ORDER BY updated DESC LIMIT $limit),"
            " agg AS (SELECT s.run_id, count(DISTINCT s.position) FILTER (WHERE s.status = "
            "'completed') AS done, coalesce(sum(s.cost_micros), 0) AS cost, "
            "coalesce(sum(s.tokens_in::BIGINT + s.tokens_out), 0) AS tokens, "
            "coalesce(sum(s.saved_micros), 0) AS saved, arg_max(s.name, s.position) FILTER "
            "(WHERE s.status = 'started' AND s.resolution IS NULL) AS current FROM steps s "
            "JOIN r ON s.run_id = r.run_id AND s.epoch = r.epoch GROUP BY s.run_id) "
            "SELECT r.run_id, r.workflow, r.run_key, r.st, r.epoch, r.tries, r.created, "
            "r.updated, r.parent, r.error, coalesce(agg.done, 0), coalesce(agg.cost, 0), "
            "coalesce(agg.tokens, 0), coalesce(agg.saved, 0), CASE WHEN r.status = 'running' "
            "THEN agg.current END, r.active, r.budget_micros, r.budget_tokens "
            "FROM r LEFT JOIN agg ON agg.run_id = r.run_id "
            "ORDER BY r.updated DESC",
            {"held": held, "status": status, "workflow": workflow, "limit": limit, "run": run_id},
        ).fetchall()
        names = (
            "run wf key status epoch try created updated parent error done cost tokens saved "
            "current active budget_usd budget_tokens"
        ).split()
        out = []
        for row in rows:
            item = dict(zip(names, row, strict=True))
            item["error"] = json.loads(item["error"]) if item["error"] else None
            usd, tokens = item.pop("budget_usd"), item.pop("budget_tokens")
            item["budget"] = [usd, tokens] if usd is not None or tokens is not None else None
            out.append(item)
        return out

    def cache_get(self, key: str) -> list[Any] | None:
        row = self.db.execute(
            "SELECT codec, output, cost_micros, created, expires FROM cache WHERE key = ?", [key]
        ).fetchone()
        return None if row is None else list(row)

    def cache_list(self, limit: int) -> list[list[Any]]:
        rows = self.db.execute(
            "SELECT key, fn, created, expires, octet_length(output), cost_micros FROM cache "
            "ORDER BY created DESC LIMIT ?",
            [limit],
        ).fetchall()
        return [list(r) for r in rows]

    def proposals(self, state: str | None) -> list[list[Any]]:
        rows = self.db.execute(
            "SELECT id, path, target, code, reason, proposed_by, created, base, old, origin, "
            "state, decided_by, decided_at, note FROM proposals WHERE ? IS NULL OR state = ? "
            "ORDER BY created",
            [state, state],
        ).fetchall()
        return [list(r) for r in rows]

    def checkpoints(self, req: dict[str, Any]) -> list[list[Any]]:
        return self.lg.query(req)

    def run_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT run_id FROM runs").fetchall()]

    def attempts(self, run_id: str, epoch: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT position, attempt, kind, name, fingerprint, status, started, ended, codec, "
            "size, error, next_position, resolution, resolved_by, cost_micros, tokens_in, "
            "tokens_out, model, cache, shown, "
            "CASE WHEN size <= 4096 THEN output END FROM steps WHERE run_id = ? AND epoch = ? "
            "ORDER BY position, attempt",
            [run_id, epoch],
        ).fetchall()
        names = (
            "pos att kind name fp status started ended codec size err next res res_by cost tin "
            "tout model cache shown"
        ).split()
        out = []
        for row in rows:
            item = dict(zip(names, row[:-1], strict=True))
            item["err"] = json.loads(item["err"]) if item["err"] else None
            shown = item.pop("shown")
            item["preview"] = (
                preview(row[8], row[-1], shown=shown) if row[-1] is not None else shown
            )
            out.append(item)
        return out

    def results(self, run_ids: list[str]) -> list[list[Any]]:
        """[run id, codec, result] of those of ``run_ids`` that completed."""
        rows = self.db.execute(
            "SELECT run_id, result_codec, result FROM runs WHERE status = 'completed' AND "
            "result_codec IS NOT NULL AND run_id IN (SELECT unnest($1::VARCHAR[]))",
            [run_ids],
        ).fetchall()
        return [list(r) for r in rows]

    def result(self, run_id: str) -> list[Any] | None:
        """The run's encoded result and, for a pickled one, the repr kept when it was written."""
        row = self.db.execute(
            "SELECT result_codec, result, result_shown FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
        return [row[0], row[1], row[2]] if row and row[0] else None

    def entry(self, run_id: str) -> tuple[str | None, list[Any] | None]:
        """How to call the run's workflow again: its entry point and encoded arguments."""
        row = self.db.execute(
            "SELECT entry, args_codec, args FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
        if row is None:
            return None, None
        return row[0], ([row[1], row[2]] if row[1] else None)

    def events(self, after: int, run_id: str | None, limit: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT seq, run_id, kind, position, attempt, name, ts, data FROM events "
            "WHERE seq > ? AND (? IS NULL OR run_id = ?) ORDER BY seq LIMIT ?",
            [after, run_id, run_id, limit],
        ).fetchall()
        names = "seq run k pos att name ts".split()
        return [dict(zip(names, r[:-1], strict=True)) | {"data": json.loads(r[-1])} for r in rows]

    def sql(
        self, query: str, cur: duckdb.DuckDBPyConnection, limit: int = SQL_ROWS
    ) -> dict[str, Any]:
        """Run one plain SELECT over the journal's tables, for ``lil journal sql``, on ``cur``
        (the query thread's cursor: ``self.db`` is the database thread's): checked with DuckDB's
        own parser, inside a read-only transaction, with no file system access (the connection
        has none), within a deadline and a size limit (``truncated`` says so)."""
        check_select(cur, query)
        timer = threading.Timer(SQL_SECONDS, cur.interrupt)
        cur.execute("BEGIN TRANSACTION READ ONLY")
        timer.start()
        try:
            cur.execute(query)
            columns = [d[0] for d in cur.description or []]
            rows: list[list[Any]] = []
            size, truncated = 0, False
            while batch := cur.fetchmany(1000):
                for row in batch:
                    values = [_plain(v) for v in row]
                    size += sum(len(v) for v in values if isinstance(v, (str, bytes))) + 8
                    if len(rows) >= limit or size > SQL_BYTES:
                        truncated = True
                        break
                    rows.append(values)
                if truncated:
                    break
        except duckdb.InterruptException:
            raise ConfigError(
                f"the query ran longer than {SQL_SECONDS:.0f} s and was stopped",
                fix="narrow it (WHERE, LIMIT) or aggregate",
            ) from None
        except duckdb.Error as exc:
            raise ConfigError(
                f"the query failed: {exc}", fix="check the SQL; tables: " + _tables(cur)
            ) from None
        finally:
            timer.cancel()
            cur.execute("ROLLBACK")
        return {"columns": columns, "rows": rows, "truncated": truncated, "limit": limit}

    def gc(self, older_than: float, statuses: Sequence[str], held: list[str]) -> list[str]:
        doomed = [
            r[0]
            for r in self.db.execute(
                "SELECT run_id FROM runs WHERE list_contains(?, status) AND updated < ? AND NOT "
                "list_contains(?, run_id) AND workflow NOT LIKE 'langgraph:%'",
                [list(statuses), older_than, held],
            ).fetchall()
        ]
        if doomed:
            self.db.execute("BEGIN")
            for table in ("steps", "events", "approvals", "runs"):
                self.db.execute(f"DELETE FROM {table} WHERE list_contains(?, run_id)", [doomed])
            self.db.execute("COMMIT")
        return doomed

    def stats(self) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM steps), "
            "(SELECT count(*) FROM events), (SELECT coalesce(sum(size), 0) FROM steps)"
        ).fetchone()
        assert row is not None
        return {"runs": row[0], "attempts": row[1], "events": row[2], "output_bytes": row[3]}

    def close(self) -> None:
        self.db.execute("CHECKPOINT")
        self.db.close()


def _approval_fields(
    run_id: str, epoch: int, pos: int, row: tuple[Any, ...] | None
) -> dict[str, Any]:
    """An approval step's request and decision, as the live state keeps them (see _approvals)."""
    if row is None:
        return {}
    aid, payload, schema, deadline, on_timeout, status, by, at, comment, edited, timed_out, att = (
        row
    )
    out: dict[str, Any] = {
        "ask": {
            "id": aid,
            "payload": payload,
            "schema": schema,
            "deadline": deadline,
            "on_timeout": on_timeout,
        }
    }
    if status in ("approved", "rejected"):
        out["ans"] = {
            "k": "answer",
            "run": run_id,
            "epoch": epoch,
            "pos": pos,
            "att": att,
            "id": aid,
            "ok": status == "approved",
            "by": by,
            "comment": comment,
            "payload": edited,
            "timeout": bool(timed_out),
            "ts": at,
        }
    return out


def check_select(db: duckdb.DuckDBPyConnection, query: str) -> None:
    """Refuse anything but one plain SELECT over the journal's own tables and views.

    DuckDB's parser decides the statement type: EXPLAIN (``EXPLAIN ANALYZE DELETE`` executes
    the DELETE), PRAGMA, CALL, SET, COPY and every write are refused whatever their spelling."""
    fix = "write one SELECT, e.g. SELECT status, count(*) FROM runs GROUP BY 1"
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise ConfigError(f"the query does not parse: {exc}", fix=fix) from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(s.type.name for s in statements) or "nothing"
        raise ConfigError(
            f"only a single SELECT (plain, read-only) may run through the journal owner, got "
            f"{kinds}",
            fix=fix,
        )
    try:
        used = {t.split(".")[-1] for t in db.cursor().get_table_names(query)}
    except duckdb.Error:  # its binder misses some forms (JOIN ... USING): execution will tell
        used = set()
    unknown = used - set(_tables(db).split(", "))
    if unknown:
        raise ConfigError(
            f"the query reads {', '.join(sorted(unknown))}, which the journal does not have",
            fix="tables: " + _tables(db),
        )


def _tables(db: duckdb.DuckDBPyConnection) -> str:
    rows = db.cursor().execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' UNION "
        "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
        "ORDER BY 1"
    )
    return ", ".join(r[0] for r in rows.fetchall())


def _plain(value: Any) -> Any:
    """SQL results as msgpack-friendly values."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    return str(value)
