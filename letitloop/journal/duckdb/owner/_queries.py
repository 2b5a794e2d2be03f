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
import time
from collections.abc import Callable

from letitloop.errors import JournalError

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    import duckdb

    from letitloop.journal.duckdb.owner._store import Store

MAX_WAITING = 8  # queries asked and not answered yet, beyond which one more is refused
STOP_SECONDS = 10.0  # what a stop waits for the running query to take its interrupt

if TYPE_CHECKING:  # (connection, request, the query's answer or what it raised): sends it
    Reply = Callable[[Any, dict[str, Any], dict[str, Any] | Exception], None]


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
        self.stopping = False  # set by close: waiting queries are answered, not run

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

    def close(self, deadline: float = STOP_SECONDS) -> None:
        """Stop the queries before DuckDB is closed: the waiting ones are answered at once (the
        owner is stopping), the running one is interrupted, until the thread has ended. The
        cursor is closed only then: closing it under a running query aborts the process."""
        self.stopping = True
        self.jobs.put(None)
        if self.thread is not None:
            until = time.monotonic() + deadline
            while self.thread.is_alive() and time.monotonic() < until:
                self.cur.interrupt()  # (a query that began after the last interrupt, too)
                self.thread.join(timeout=0.05)
            if self.thread.is_alive():  # DuckDB did not stop it: leave the cursor to exit
                return
        self.cur.close()

    def _run(self) -> None:
        while (job := self.jobs.get()) is not None:
            conn, req = job
            answer: dict[str, Any] | Exception
            if self.stopping:
                answer = JournalError(
                    "the journal owner is stopping; the query was not run",
                    fix="ask again: the next call starts a new owner",
                )
            else:
                try:
                    answer = self.store.sql(req["sql"], self.cur)
                except Exception as exc:  # a failed query is its asker's error, not the owner's
                    answer = exc
                if self.stopping and isinstance(answer, Exception):
                    answer = JournalError(
                        "the journal owner stopped while the query ran; it was interrupted",
                        fix="ask again: the next call starts a new owner",
                    )
            with self.lock:
                self.waiting -= 1
            self.reply(conn, req, answer)
