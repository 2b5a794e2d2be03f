"""How an owner starts: cold (DuckDB open, the log's unfolded suffix folded before serving) or
warm (the runs of a verified snapshot served at once, DuckDB opened by the database thread)."""

from __future__ import annotations

import os
import sys
import time

from letitloop.errors import LetItLoopError
from letitloop.journal._state import (
    _WIRE_FIELDS,
    RunEntry,
)
from letitloop.journal.duckdb import _files
from letitloop.journal.duckdb.owner import _warm
from letitloop.journal.duckdb.owner._base import (
    WARM_MAX,
    OwnerBase,
)
from letitloop.journal.duckdb.owner._conn import Conn
from letitloop.journal.duckdb.owner._reads import QUERIES, READS

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any


class Starting(OwnerBase):
    """Cold and warm starts, and serving the requests that waited for DuckDB."""

    def _cold_start(self) -> None:
        """Open DuckDB, fold what the log holds after its watermark, then serve (the usual)."""
        from letitloop.journal.duckdb.owner import _notify
        from letitloop.journal.duckdb.owner._store import Store  # duckdb: only once this owner won

        self.store = Store(self.paths.db)
        _files.protect_existing(self.paths, self.share_gid)
        items, torn = self.log.recover(self.store.folded_lsn)
        self.stats["torn_tails_cut"] = torn
        recs = self.store.decode(items)  # a record that cannot be read is quarantined
        self.store.fold(recs)  # recovery folds the unfolded suffix before serving
        self.log.drop_folded(self.store.folded_lsn)
        self.known = self.store.known_runs()
        self.stats["replayed"] = len(recs)
        self.notifier = _notify.start(self.store, self.paths.db)  # before serving: see _notify
        self.db_ready = True
        self.load_now.set()

    def _warm_start(self, warm: _warm.Warm) -> str:
        """Serve from a verified snapshot if the log holds nothing after it; "" if it does,
        else why not (the caller then starts cold). DuckDB is opened by the database thread."""
        scan = self.log.scan(warm.folded_lsn)
        if scan.records or scan.damage or scan.torn is not None or scan.end != warm.folded_lsn:
            return "stale: the log holds records written after it"
        try:
            runs = {data["run"]: entry_from(data) for data in warm.runs}
        except (KeyError, TypeError, ValueError, IndexError):
            return "unreadable runs"
        _items, torn = self.log.recover(warm.folded_lsn)  # nothing to replay: opens for appends
        self.stats["torn_tails_cut"] = torn
        self.stats["replayed"] = 0
        _files.protect_existing(self.paths, self.share_gid)
        self.state.runs.update(runs)
        self.known = set(runs)  # every run DuckDB has joins when it is open
        self.journal_id, self.schema_version, self.warm_lsn = (
            warm.journal_id,
            warm.schema,
            warm.folded_lsn,
        )
        return ""

    def _open_db(self) -> None:
        """Database thread, warm start: open DuckDB when the event loop allows (see WARM_QUIET),
        then hand the event loop the runs DuckDB knows and the requests that waited for it."""
        self.load_now.wait(WARM_MAX)
        t0 = time.perf_counter()
        from letitloop.journal.duckdb.owner import _notify
        from letitloop.journal.duckdb.owner._store import Store

        try:
            store = Store(self.paths.db)
        except LetItLoopError as exc:  # said plainly, as main() does: clients show this log
            print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr, flush=True)
            os._exit(2)
        if store.journal_id != self.journal_id or store.folded_lsn != self.warm_lsn:
            print(
                f"error: the journal {self.paths.db} is not the one its warm-start snapshot "
                f"described (journal {store.journal_id} folded to {store.folded_lsn}, snapshot "
                f"{self.journal_id} at {self.warm_lsn}); every acknowledged record is in its log\n"
                "  fix: run the workflow again: the next owner starts from DuckDB and its log",
                file=sys.stderr,
                flush=True,
            )
            os._exit(70)
        known = store.known_runs()
        self.store = store
        self.notifier = _notify.start(store, self.paths.db)  # before any fold: see _notify
        ms = round((time.perf_counter() - t0) * 1e3, 1)
        print(f"DUCKDB open in {ms} ms, {time.time() - self.started:.3f} s after start", flush=True)
        self.inbox.append(("ready", known))
        self.wake_w.send(b"x")

    def _db_ready(self, known: set[str], batch: Any, replies: Any) -> None:
        """Event loop: DuckDB is open; handle, in order, the requests that waited for it."""
        self.known |= known
        self.db_ready = True
        if self.kick_pending:
            self.notifier.kick()
        waited, self.deferred = self.deferred, []
        self.deferring.clear()
        for conn, req in waited:
            self._redo(conn, req, batch, replies)

    def _needs_db(self, conn: Conn, op: Any, req: dict[str, Any]) -> bool:
        """Before DuckDB is open: whether a request must wait for it (a run the snapshot does not
        hold may be in DuckDB; a connection's requests are handled in order)."""
        if op in READS or op in QUERIES:
            self.load_now.set()  # reads wait in the database thread's queue
        if conn in self.deferring or op in ("notices", "notice_retry"):
            return True
        runs = self.state.runs
        if op == "append":
            return any(rec.get("run") and rec["run"] not in runs for rec in req["recs"])
        if op == "relock":
            return any(rid not in runs for rid in req["runs"])
        run_id = req.get("run")
        return bool(run_id) and op not in READS and op != "output" and run_id not in runs


def entry_from(data: dict[str, Any]) -> RunEntry:
    """A run of the live state from what ``Store.load_run`` (or a snapshot) holds of it."""
    entry = RunEntry(data["run"], data["wf"], data["key"], data["created"])
    entry.updated, entry.epoch, entry.status, entry.tries = (
        data["updated"],
        data["epoch"],
        data["status"],
        data["try"],
    )
    entry.args, entry.entry, entry.parent = data["args"], data["entry"], data["parent"]
    entry.result = (data["result"][0], data["result"][1]) if data["result"] else None
    entry.error = data["error"]
    entry.started_by = data["started_by"]
    entry.cost_micros, entry.tokens = data["cost"], data["tokens"]
    entry.budget = tuple(data["budget"]) if data["budget"] else None
    if entry.status == "running":  # this owner does not know whether its starter still runs it
        entry.orphan_of = entry.started_by
    entry.keys = set(data["keys"])
    entry.board = dict(data.get("board") or {})  # (a snapshot of an older owner has none)
    for step in data["steps"]:
        step["wire"] = [step.get(f) for f in _WIRE_FIELDS]
        entry.steps[step["pos"]] = step
    return entry
