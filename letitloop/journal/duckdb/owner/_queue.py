"""The owner is the queue on one machine: queued runs, claims and workers (``journal._queues``).

The event loop holds the ``QueueBoard`` and makes every decision in memory; what a request
changed is written to DuckDB (``queues``, ``queue_items``) by the database thread, which answers
the client only after the commit, so an acknowledged enqueue, claim or finish is durable. The
board is loaded from DuckDB by the first queue request. A worker's claims go back to the queue
the moment its process's connections close, and when it misses its heartbeat TTL (a frozen
worker): then its run leases are revoked too, so its next write is refused (``LeaseLostError``).
A recoverable run's item is held by its caller's session (``hold``) and goes back to the queue
the moment that process's connections close, or, after an owner restart, once the owner finds
its process gone.
"""

from __future__ import annotations

import queue
import time

from letitloop.journal.duckdb.owner._base import OwnerBase
from letitloop.journal.duckdb.owner._conn import Conn, error_reply, reply_to
from letitloop.journal.duckdb.owner._requests import BadRequest

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal._queues import QueueBoard, QueueSpec

LAPSE_CHECK = 0.2  # seconds between looks for workers past their TTL
HOLD_CHECK = 2.0  # ... and for held runs whose process died while no owner was running
_ITEM_COLS = (
    "run_id, queue, workflow, run_key, priority, state, enqueued, claimed_by, claimed_at, "
    "claims, finished, outcome, entry, args_codec, args"
)
TABLES = """
CREATE TABLE IF NOT EXISTS queues(
  name VARCHAR PRIMARY KEY, concurrency INTEGER, per_worker INTEGER, limit_n INTEGER,
  period DOUBLE NOT NULL, priority BOOLEAN NOT NULL, paused BOOLEAN NOT NULL);
CREATE TABLE IF NOT EXISTS queue_items(
  run_id VARCHAR PRIMARY KEY, queue VARCHAR NOT NULL, workflow VARCHAR NOT NULL,
  run_key VARCHAR NOT NULL, priority INTEGER NOT NULL, state VARCHAR NOT NULL,
  enqueued DOUBLE NOT NULL, claimed_by VARCHAR, claimed_at DOUBLE, claims INTEGER NOT NULL,
  finished DOUBLE, outcome VARCHAR, entry VARCHAR, args_codec VARCHAR, args BLOB);
"""
KEEP_LOADED = 10_000  # finished items loaded at start (status and dedup of recent runs)


class QueueOps(OwnerBase):
    """The ``queue`` request and the board's upkeep (sessions gone, workers lapsed)."""

    board: QueueBoard
    board_ready: bool
    board_parked: list[tuple[Conn, dict[str, Any]]]
    lapse_checked: float

    def _queue_request(self, conn: Conn, req: dict[str, Any], replies: list[Any]) -> None:
        # imported by the first queue request: an owner that serves no queue never loads them
        from letitloop.journal._queue_wire import item_from, spec_from, to_wire, worker_from
        from letitloop.journal._queues import OUTCOMES, QueueBoard

        if not getattr(self, "board_ready", False):
            if not hasattr(self, "board_parked"):
                self.board, self.board_parked, self.board_ready = QueueBoard(), [], False
                self.lapse_checked = 0.0
                self.load_now.set()
                self.jobs.put(("qload",))
            self.board_parked.append((conn, req))
            return
        now, act, board = time.time(), req["act"], self.board
        reply: dict[str, Any] = {"ok": True}
        if act == "enqueue":
            reply["new"] = board.enqueue(spec_from(req.get("spec")), item_from(req.get("item")))
        elif act == "claim":
            n = req.get("n", 1)
            taken = board.claim(worker_from(req.get("worker")), n, now, conn.session)
            reply["items"] = [to_wire(i) for i in taken]
        elif act == "beat":
            reply["lost"] = board.beat(worker_from(req.get("worker")), now, conn.session)
        elif act == "finish":
            outcome = req.get("outcome")
            if outcome not in OUTCOMES:
                raise BadRequest(f"request 'queue': outcome must be one of {sorted(OUTCOMES)}")
            reply["done"] = board.finish(_text(req, "wid"), _text(req, "run"), outcome, now)
        elif act in ("hold", "unhold"):
            self._hold_request(conn, req, now)
        elif act == "leave":
            board.leave(_text(req, "wid"))
        elif act == "pause":
            board.pause(_text(req, "name"), bool(req.get("paused")))
        elif act == "queues":
            reply["queues"] = [[to_wire(q.spec), *q[1:]] for q in board.infos(now)]
        elif act == "items":
            limit = min(max(0, req.get("limit", 100)), 10_000)
            rows = board.list_items(req.get("queue"), req.get("state"), limit)
            reply["items"] = [to_wire(i) for i in rows]
        elif act == "item":
            found = board.items.get(_text(req, "run"))
            reply["item"] = to_wire(found) if found is not None else None
        elif act == "workers":
            reply["workers"] = [to_wire(w) for w in board.worker_infos(now)]
        else:
            raise BadRequest(f"request 'queue': unknown act {act!r}"[:200])
        self._queue_persist(conn, req, reply, replies)

    def _hold_request(self, conn: Conn, req: dict[str, Any], now: float) -> None:
        """A recoverable run's process holds its item (or is done with it) in its session."""
        from letitloop.journal._queue_wire import item_from, spec_from
        from letitloop.journal._queues import OUTCOMES
        if conn.session is None:
            raise BadRequest("request 'queue': hold and unhold need a session (say hello first)")
        if req["act"] == "hold":
            spec, declare = spec_from(req.get("spec")), bool(req.get("declare"))
            self.board.hold(spec, item_from(req.get("item")), conn.session, now, declare)
            return
        outcome = req.get("outcome")
        if outcome not in OUTCOMES or outcome == "released":
            raise BadRequest(f"request 'queue': outcome must be one of {sorted(OUTCOMES)}")
        self.board.finish(conn.session, _text(req, "run"), outcome, now)

    def _queue_persist(
        self, conn: Conn | None, req: dict[str, Any] | None, reply: dict[str, Any], replies: Any
    ) -> None:
        """Reply now if nothing changed, else after the database thread committed the change."""
        items, queues = self.board.take_dirty()
        if items or queues:
            self.jobs.put(("qsave", conn, req, reply, items, queues))
        elif conn is not None and req is not None:
            replies.append((conn, reply_to(req, reply)))

    def _queue_loaded(self, data: Any, batch: Any, replies: Any) -> None:
        """Event loop: the board's rows came from DuckDB; serve the requests that waited."""
        queues, items = data
        self.board.load(queues, items, time.time())
        self.board_ready = True
        parked, self.board_parked = self.board_parked, []
        for conn, req in parked:
            self._redo(conn, req, batch, replies)

    def _queue_session_gone(self, session: str) -> None:
        """A process's last connection closed: the workers it ran leave, their claims free."""
        if getattr(self, "board_ready", False) and self.board.leave_session(session):
            self._queue_persist(None, None, {}, [])

    def _queue_tick(self) -> None:
        """Workers past their TTL lose their claims and, fenced, their run leases."""
        if not getattr(self, "board_ready", False):
            return
        now = time.monotonic()
        if now - self.lapse_checked < LAPSE_CHECK:
            return
        self.lapse_checked = now
        changed = False
        if now - getattr(self, "holds_checked", 0.0) > HOLD_CHECK:
            self.holds_checked = now
            changed = bool(self.board.orphaned_holds(set(self.sessions)))
        for _worker, session, _runs in self.board.newly_lapsed(time.time()):
            changed = True
            if session is None:
                continue
            for run_id in self.state.release_session(session):  # fenced: refused from now on
                self.state.runs[run_id].fenced = session
                self._wake_waiters(run_id)
        if changed:
            self._queue_persist(None, None, {}, [])

    # -- the database thread ---------------------------------------------------------------

    def _queue_db_job(self, job: tuple[Any, ...]) -> None:
        if job[0] == "qload":
            self.store.db.execute(TABLES)
            self.inbox.append(("qloaded", _load(self.store.db)))
            self.wake_w.send(b"x")
            return
        self._queue_saves(job, more=False)

    def _queue_saves(self, job: tuple[Any, ...], more: bool = True) -> tuple[Any, ...] | None:
        """Save ``job`` and the queue saves queued behind it in one DuckDB commit (a group
        commit: a busy fleet's claims and finishes share it), then answer each. Returns the
        next job that is not a save, taken from the queue (or None)."""
        batch, after = [job], None
        while more:
            try:
                after = self.jobs.get_nowait()
            except queue.Empty:
                after = None
                break
            if not (isinstance(after, tuple) and after and after[0] == "qsave"):
                break
            batch.append(after)
        items: dict[str, Any] = {}
        queues: dict[str, tuple[QueueSpec, bool]] = {}
        for _, _, _, _, its, qs in batch:  # the newest state of each row wins
            items.update((i.run_id, i) for i in its)
            queues.update((q[0].name, q) for q in qs)
        failure: Exception | None = None
        try:
            _save(self.store.db, list(items.values()), list(queues.values()))
        except Exception as exc:  # the clients learn the change may not have been kept
            failure = exc
        for _, conn, req, reply, _, _ in batch:
            if conn is not None:
                self._send(conn, reply_to(req, error_reply(failure) if failure else reply))
        return after


def _text(req: dict[str, Any], name: str) -> str:
    value = req.get(name)
    if not isinstance(value, str):
        raise BadRequest(f"request 'queue': field {name!r} must be text")
    return value


def _load(db: Any) -> tuple[list[tuple[QueueSpec, bool]], list[Any]]:
    from letitloop.journal._queue_wire import items_of
    from letitloop.journal._queues import QueueSpec

    queues = [
        (QueueSpec(r[0], r[1], r[2], r[3], r[4], r[5]), bool(r[6]))
        for r in db.execute(
            "SELECT name, concurrency, per_worker, limit_n, period, priority, paused FROM queues"
        ).fetchall()
    ]
    open_rows = db.execute(
        f"SELECT {_ITEM_COLS} FROM queue_items WHERE state <> 'finished'"
    ).fetchall()
    done_rows = db.execute(
        f"SELECT {_ITEM_COLS} FROM queue_items WHERE state = 'finished' "
        "ORDER BY finished DESC LIMIT ?",
        [KEEP_LOADED],
    ).fetchall()
    return queues, items_of(list(reversed(done_rows)) + open_rows)


def _save(db: Any, items: list[Any], queues: list[tuple[QueueSpec, bool]]) -> None:
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
                f"INSERT OR REPLACE INTO queue_items ({_ITEM_COLS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
