"""Folding log records into the DuckDB tables, in batches, on the database thread.

Each batch and the log position it reaches commit in one transaction, so after a crash exactly
the unfolded suffix of the log is replayed. What a record changes is the projection every
backend shares (``journal._rows``); folding adds what DuckDB does in bulk (run starts and ends in
one statement per kind, steps and events as column arrays) and a run's active time.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import duckdb

from letitloop.errors import JournalError
from letitloop.journal import _rows
from letitloop.journal._records import CHECKPOINT_KINDS, Record, validate
from letitloop.journal.duckdb.owner._checkpoint_store import CheckpointStore

_UNNEST_STEPS = ", ".join(f"unnest(${i + 1})" for i in range(len(_rows.STEP_COLS)))
_INSERT_STEPS = f"INSERT INTO steps SELECT {_UNNEST_STEPS}"
_UPSERT_STEPS = f"{_INSERT_STEPS} ON CONFLICT DO UPDATE SET {_rows.STEP_MERGE}"
_EVENT_COLS = "key seq run_id kind epoch position attempt name ts data".split()
_INSERT_EVENTS = (
    f"INSERT INTO events SELECT {', '.join(f'unnest(${i + 1})' for i in range(len(_EVENT_COLS)))}"
)
_MERGE_EVENTS = f"{_INSERT_EVENTS} ON CONFLICT DO NOTHING"
_BATCH = 5000
# records a run's own process writes: the newest one is where its current try has got to
_ACTIVE = frozenset({"step", "ok", "err", "rewind", "done", "fail", "suspend"})


class Bad:
    """A log frame that is not a valid record: its bytes and why, for the quarantine."""

    def __init__(self, payload: bytes, error: str, rec: dict[str, Any] | None) -> None:
        self.payload, self.error, self.rec = payload, error, rec


def _fatal(exc: BaseException) -> bool:
    """Errors of the database or the machine (disk, I/O, a failed rollback, memory), not of one
    record: the owner must stop on these, so that a fresh owner replays the log; a record is
    never quarantined for them."""
    from letitloop.journal.duckdb.owner._log import (
        disk_full,  # a full disk is not one record's fault
    )

    fatal: tuple[type[BaseException], ...] = (duckdb.IOException, duckdb.FatalException)
    fatal += (duckdb.InternalException, duckdb.TransactionException, duckdb.OutOfMemoryException)
    fatal += (MemoryError, OSError)
    return isinstance(exc, fatal) or disk_full(exc) is not None


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
# a run's first start (try 1 of epoch 0): a new row, inserted without the merge (a statement a
# third of the cost to plan and run); a row already there fails it, and the fold merges instead
_NEW_RUNS = _INSERT_RUNS[: _INSERT_RUNS.index(" ON CONFLICT")]
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

    def __init__(self, db: duckdb.DuckDBPyConnection, fresh: bool = False) -> None:
        self.db = db
        self.fresh = fresh  # first starts insert new rows (see _NEW_RUNS)
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
        new = [r for r in self.starts if self.fresh and r["try"] == 1 and r["epoch"] == 0]
        again = [r for r in self.starts if not (self.fresh and r["try"] == 1 and r["epoch"] == 0)]
        for sql, starts in ((_NEW_RUNS, new), (_INSERT_RUNS, again)):
            if starts:
                rows = []
                for rec in starts:
                    args = rec.get("args") or [None, None]
                    row = [rec["run"], rec["wf"], rec["key"], rec["epoch"], rec["try"], rec["ts"]]
                    rows.append(row + [args[0], args[1], rec["entry"], rec["parent"], rec["by"]])
                self.db.execute(sql, [list(c) for c in zip(*rows, strict=True)])
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
                    [_rows.to_json(r["err"]) for r in fails],
                    [r["ts"] for r in fails],
                ],
            )
        self.starts, self.dones, self.fails, self.runs = [], [], [], {}


class Folds:
    """The ``Store``'s folding (its connection ``db`` is the database thread's)."""

    db: duckdb.DuckDBPyConnection
    lg: CheckpointStore
    folded_lsn: int
    quarantined: int

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
                    self._fold_alone(one)

    def _fold_alone(self, one: tuple[int, Record]) -> None:
        """Fold one record of a failed batch, or set it aside. It is tried twice: a rollback
        resets the checkpoint caches (``CheckpointStore.rolled_back``), and a conflict that
        came from what a cache could not know (writes folded before it was made) does not
        happen again on the cache read afresh from the tables."""
        for attempt in (1, 2):
            try:
                self._fold_part([one])
                return
            except Exception as exc:
                if _fatal(exc):
                    raise
                if attempt == 2:
                    self._quarantine(one[0], one[1], None, f"{type(exc).__name__}: {exc}")

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
        """Fold records in one transaction (advancing the folded position unless retrying).

        Rows are first inserted as new (a plain ``INSERT`` costs a third of one that merges
        with the rows already there); a row that is there already (a record folded again, an
        outcome folded before its start) fails that, and the part is folded again merging."""
        try:
            self._fold_once(part, advance, fresh=True)
        except duckdb.ConstraintException:
            self._fold_once(part, advance, fresh=False)

    def _fold_once(self, part: Sequence[tuple[int, Record]], advance: bool, fresh: bool) -> None:
        if part:
            self.db.execute("BEGIN")
            try:
                self._fold_events(part, fresh)
                self._fold_approvals([r for _, r in part if r.get("ask") or r["k"] == "answer"])
                steps: list[Record] = []
                for _, rec in part:  # a rewind applies to the step records before it only
                    if rec["k"] == "rewind":
                        self._fold_steps(steps, fresh)
                        steps = []
                        self._fold_rewind(rec)
                    elif "pos" in rec and rec["k"] != "answer":
                        steps.append(rec)
                self._fold_steps(steps, fresh)
                self.lg.fold([r for _, r in part if r["k"] in CHECKPOINT_KINDS])
                active: dict[str, float] = {}  # the newest record its process wrote, by run
                heads = _Heads(self.db, fresh)  # run starts and completions, folded in bulk
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
                self.lg.rolled_back()
                raise
            if advance:
                self.folded_lsn = max(self.folded_lsn, part[-1][0])

    def _touch_runs(self, part: Sequence[tuple[int, Record]], active: dict[str, float]) -> None:
        """A run's ``updated`` moves with every step record, not only with its header's; its
        ``last_active`` with what its own process wrote (the end of its current try). One
        statement for both (``greatest`` skips the NULL of a column a run does not move)."""
        latest: dict[str, float] = {}
        for _, rec in part:
            if "pos" in rec and rec["run"]:
                latest[rec["run"]] = max(latest.get(rec["run"], 0.0), rec["ts"])
        runs = list(latest.keys() | active.keys())
        if runs:
            self.db.execute(
                "UPDATE runs SET updated = greatest(runs.updated, t.ts), last_active = "
                "greatest(runs.last_active, t.active) FROM (SELECT unnest($1::VARCHAR[]) AS "
                "run_id, unnest($2::DOUBLE[]) AS ts, unnest($3::DOUBLE[]) AS active) t "
                "WHERE runs.run_id = t.run_id",
                [runs, [latest.get(r) for r in runs], [active.get(r) for r in runs]],
            )

    def _fold_events(self, part: Sequence[tuple[int, Record]], fresh: bool) -> None:
        rows = [(key, lsn, *rest) for lsn, rec in part for key, *rest in (_rows.event_row(rec),)]
        self.db.execute(
            _INSERT_EVENTS if fresh else _MERGE_EVENTS, [list(c) for c in zip(*rows, strict=True)]
        )

    def _fold_approvals(self, recs: Sequence[Record]) -> None:
        for rec in recs:
            sql, params = (
                _rows.ask_statement(rec) if rec["k"] == "step" else _rows.answer_statement(rec)
            )
            self.db.execute(sql, params)

    def _fold_rewind(self, rec: Record) -> None:
        for sql, params in _rows.rewind_statements(rec):
            self.db.execute(sql, params)

    def _fold_steps(self, recs: Sequence[Record], fresh: bool) -> None:
        """Attempts whose start is among ``recs`` are new rows (inserted), others merge into
        the row their start made (``fresh=False``: every row merges)."""
        merged: dict[_rows.StepKey, dict[str, Any]] = {}
        for rec in recs:
            _rows.merge_step(merged, rec)
        if not merged:
            return
        new: dict[_rows.StepKey, dict[str, Any]] = {}
        if fresh:
            new = {key: row for key, row in merged.items() if "started" in row}
            merged = {key: row for key, row in merged.items() if "started" not in row}
        for sql, rows in ((_INSERT_STEPS, new), (_UPSERT_STEPS, merged)):
            if rows:
                self.db.execute(sql, [list(c) for c in zip(*_rows.step_rows(rows), strict=True)])

    def _fold_run(self, rec: Record) -> None:
        k, run_id, ts = rec["k"], rec["run"], rec["ts"]
        if k in CHECKPOINT_KINDS:
            return  # folded in bulk by journal.duckdb.owner._checkpoint_store
        statements = _rows.run_statements(rec)
        if statements is not None:
            for sql, params in statements:
                self.db.execute(sql, params)
            return
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
            self.db.execute(*_rows.cancel_pending(run_id))
