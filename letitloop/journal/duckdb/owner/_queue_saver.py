"""The owner's queue-save thread: what the queue board changed is committed to DuckDB on a thread
and cursor of its own (DuckDB runs cursors of one connection concurrently; the queue tables are
not the ones folds write), so an enqueue, a claim or a finish never waits behind the database
thread's fold of run records. The saves waiting together share one commit (a busy fleet's
claims and finishes in one), and each request is answered only once its change is committed.
"""

from __future__ import annotations

import queue
import threading

from letitloop.journal.duckdb.owner._conn import error_reply, reply_to

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import duckdb

    from letitloop.journal._queues import QueueItem, QueueSpec

ITEM_COLS = (
    "run_id, queue, workflow, run_key, priority, state, enqueued, claimed_by, claimed_at, "
    "claims, finished, outcome, entry, args_codec, args"
)
KEEP_LOADED = 10_000  # finished items loaded at start (status and dedup of recent runs)
MAX_BATCH = 1_000  # saves one commit takes at most

# a save: (connection or None, request, reply, the items changed, the queues changed)
if TYPE_CHECKING:
    Save = tuple[Any, Any, dict[str, Any], list[QueueItem], list[tuple[QueueSpec, bool]]]


class QueueSaver:
    """Commits the board's changes on its own thread and cursor; ``send`` answers a client
    (from this thread: the owner's ``_send`` takes sends from any thread), ``wake`` wakes the
    event loop to deliver what could not go out at once."""

    def __init__(
        self, cur: duckdb.DuckDBPyConnection, send: Callable[[Any, Any], None], wake: Any
    ) -> None:
        self.cur, self.send, self.wake = cur, send, wake
        self.jobs: queue.SimpleQueue[Save | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="lil-queue-save", daemon=True)
        self.thread.start()

    def put(self, job: Save) -> None:
        self.jobs.put(job)

    def close(self) -> None:
        """Commit what waits, then stop (before DuckDB is closed)."""
        self.jobs.put(None)
        self.thread.join()
        self.cur.close()

    def _run(self) -> None:
        done = False
        while not done:
            job = self.jobs.get()
            if job is None:
                return
            batch = [job]
            while len(batch) < MAX_BATCH:
                try:
                    more = self.jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    done = True
                    break
                batch.append(more)
            self._commit(batch)

    def _commit(self, batch: list[Save]) -> None:
        items: dict[str, QueueItem] = {}
        queues: dict[str, tuple[QueueSpec, bool]] = {}
        for _, _, _, its, qs in batch:  # the newest state of each row wins
            items.update((i.run_id, i) for i in its)
            queues.update((q[0].name, q) for q in qs)
        failure: Exception | None = None
        try:
            save(self.cur, list(items.values()), list(queues.values()))
        except Exception as exc:  # the clients learn the change may not have been kept
            failure = exc
        for conn, req, reply, _, _ in batch:
            if conn is not None:
                self.send(conn, reply_to(req, error_reply(failure) if failure else reply))
        self.wake.send(b"x")


def load(db: Any) -> tuple[list[tuple[QueueSpec, bool]], list[QueueItem]]:
    """The queues and items DuckDB keeps: every unfinished item, the newest finished ones."""
    from letitloop.journal._queue_wire import items_of
    from letitloop.journal._queues import QueueSpec

    queues = [
        (QueueSpec(r[0], r[1], r[2], r[3], r[4], r[5]), bool(r[6]))
        for r in db.execute(
            "SELECT name, concurrency, per_worker, limit_n, period, priority, paused FROM queues"
        ).fetchall()
    ]
    open_rows = db.execute(
        f"SELECT {ITEM_COLS} FROM queue_items WHERE state <> 'finished'"
    ).fetchall()
    done_rows = db.execute(
        f"SELECT {ITEM_COLS} FROM queue_items WHERE state = 'finished' "
        "ORDER BY finished DESC LIMIT ?",
        [KEEP_LOADED],
    ).fetchall()
    return queues, items_of(list(reversed(done_rows)) + open_rows)


def save(db: Any, items: list[QueueItem], queues: list[tuple[QueueSpec, bool]]) -> None:
    db.execute("BEGIN")
    try:
        for spec, paused in queues:
            db.execute(
                "INSERT OR REPLACE INTO queues VALUES (?, ?, ?, ?, ?, ?, ?)", [*spec, paused]
            )
        if items:
            rows = [
                [*i[:12], i.entry, i.args[0] if i.args else None, i.args[1] if i.args else None]
                for i in items
            ]
            db.executemany(
                f"INSERT OR REPLACE INTO queue_items ({ITEM_COLS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
