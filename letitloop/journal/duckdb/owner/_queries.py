"""The owner's query thread: ``lil journal sql`` queries run here, one at a time, off the
database thread.

A query may run for up to ``Store.SQL_SECONDS`` (30 s). On the database thread it would stop
the folds that long, and with the fold lag bounded (back-pressure) every writer would stop
with them once the bound was reached. Here it reads through a cursor of its own (DuckDB runs
cursors of one connection concurrently) what the database thread folded before handing it
over, so a query still sees every record acknowledged before it was asked. Waiting queries
are bounded: one more is refused, saying so, instead of queueing without end.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from letitloop.errors import JournalError

if TYPE_CHECKING:
    import duckdb

    from letitloop.journal.duckdb.owner._store import Store

MAX_WAITING = 8  # queries asked and not answered yet, beyond which one more is refused

# (connection, request, the query's answer or what it raised): sends the reply
Reply = Callable[[Any, dict[str, Any], "dict[str, Any] | Exception"], None]


class Queries:
    """Runs queries on one thread and cursor; ``ask`` answers through ``reply`` when the query
    ends. Made on the database thread, which alone uses the store's own connection."""

    def __init__(self, store: Store, reply: Reply) -> None:
        self.store, self.reply = store, reply
        self.cur: duckdb.DuckDBPyConnection = store.db.cursor()
        self.jobs: queue.SimpleQueue[tuple[Any, dict[str, Any]] | None] = queue.SimpleQueue()
        self.waiting = 0
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def ask(self, conn: Any, req: dict[str, Any]) -> None:
        """Queue one ``sql`` request (on the database thread, right after a fold) or refuse it."""
        with self.lock:
            taken = self.waiting < MAX_WAITING
            self.waiting += taken
        if not taken:
            busy = JournalError(
                f"{MAX_WAITING} journal queries are already waiting for the owner",
                fix="wait for them to finish (each stops at 30 s), then ask again",
            )
            self.reply(conn, req, busy)
            return
        if self.thread is None:  # (only the database thread asks)
            self.thread = threading.Thread(target=self._run, name="lil-sql", daemon=True)
            self.thread.start()
        self.jobs.put((conn, req))

    def close(self) -> None:
        """Stop the query running now, if any, and the thread (before DuckDB is closed)."""
        self.cur.interrupt()
        self.jobs.put(None)
        if self.thread is not None:
            self.thread.join(timeout=5.0)
        self.cur.close()

    def _run(self) -> None:
        while (job := self.jobs.get()) is not None:
            conn, req = job
            answer: dict[str, Any] | Exception
            try:
                answer = self.store.sql(req["sql"], self.cur)
            except Exception as exc:  # a failed query is its asker's error, never the owner's
                answer = exc
            with self.lock:
                self.waiting -= 1
            self.reply(conn, req, answer)
