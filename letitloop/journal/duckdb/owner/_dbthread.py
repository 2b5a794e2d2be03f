"""The database thread: the only user of DuckDB. It folds acknowledged records into the tables in
batches and answers reads after folding what was acknowledged before them (read-your-writes)."""

from __future__ import annotations

import os
import queue
import sys
import time

from letitloop.journal.duckdb.owner._base import (
    _FOLD_NOW,
    _TICK,
    FOLD_DELAY,
    OwnerBase,
)
from letitloop.journal.duckdb.owner._conn import Conn, error_reply, reply_to
from letitloop.journal.duckdb.owner._log import disk_full
from letitloop.journal.duckdb.owner._queries import Queries
from letitloop.journal.duckdb.owner._reads import QUERIES, READS

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any


class DbThread(OwnerBase):
    """Folding and reading on the database thread."""

    def _db_thread(self) -> None:
        try:
            if not self.db_ready:
                self._open_db()
            while True:
                wait = 1.0
                if self.to_fold:
                    wait = max(0.0, self.unfolded_since + FOLD_DELAY - time.monotonic())
                    if len(self.to_fold) >= _FOLD_NOW:
                        wait = 0.0
                try:
                    job: tuple[Any, ...] | None = self.jobs.get(timeout=wait)
                except queue.Empty:
                    job = None
                if (job is not None and job is not _TICK) or self._fold_due():
                    self._fold()
                if job is None or job is _TICK:
                    continue
                if job[0] == "exit":
                    return
                self._db_job(job)
        except BaseException as exc:  # DuckDB failed: die, so a fresh owner replays the log
            full = disk_full(exc)
            if full is not None:  # said plainly: clients show the end of this log to people
                print(
                    f"error: no space left on the device holding the journal {self.paths.db} "
                    f"({full}); every acknowledged record is kept in its log\n"
                    f"  fix: free space on the disk of {self.paths.root} (`df -h "
                    f"{self.paths.root}`), then run the workflow again",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(75)
            import traceback  # (a bug's report: not imported before one)

            traceback.print_exc()
            sys.stderr.flush()
            os._exit(70)

    def _fold_due(self) -> bool:
        """Whether waiting records should be folded without a read asking for them."""
        if not self.to_fold:
            return False
        waited = time.monotonic() - self.unfolded_since
        return waited >= FOLD_DELAY or len(self.to_fold) >= _FOLD_NOW

    def _fold(self) -> None:
        items = []
        while self.to_fold:
            items.append(self.to_fold.popleft())
        if items:
            self.store.fold(items)
            self.log.drop_folded(self.store.folded_lsn)
            self.folded.set()

    def _db_job(self, job: tuple[Any, ...]) -> None:
        if job[0] == "load":
            data = self.store.load_run(job[1])
            self.inbox.append(("loaded", job[1], data))
            self.wake_w.send(b"x")
            return
        if job[0] == "qload":
            self._queue_db_job(job)
            return
        _, conn, req, held = job
        if req["op"] in QUERIES:  # up to 30 s: on the query thread, so folds go on meanwhile
            if self.queries is None:
                self.queries = Queries(self.store, self._answer_query)
            self.queries.ask(conn, req)
            return
        try:
            reply = {"ok": True, **READS[req["op"]](self, req, held)}
        except Exception as exc:  # a failed read must not stop folding
            reply = error_reply(exc)
        self._send(conn, reply_to(req, reply))

    def _answer_query(
        self, conn: Conn, req: dict[str, Any], answer: dict[str, Any] | Exception
    ) -> None:
        """The query thread's reply (what could not go out at once waits for the event loop)."""
        reply = error_reply(answer) if isinstance(answer, Exception) else {"ok": True, **answer}
        self._send(conn, reply_to(req, reply))
        self.wake_w.send(b"x")
