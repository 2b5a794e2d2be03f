"""The owner is the queue on one machine: queued runs, claims and workers (``journal._queues``).

The event loop holds the ``QueueBoard`` and makes every decision in memory; what a request
changed is written to DuckDB (``queues``, ``queue_items``) by the queue-save thread
(``_queue_saver``), which answers the client only after the commit, so an acknowledged enqueue,
claim or finish is durable. The
board is loaded from DuckDB by the first queue request. A worker's claims go back to the queue
the moment its process's connections close, and when it misses its heartbeat TTL (a frozen
worker): then its run leases are revoked too, so its next write is refused (``LeaseLostError``).
A recoverable run's item is held by its caller's session (``hold``) and goes back to the queue
the moment that process's connections close, or, after an owner restart, once the owner finds
its process gone.
"""

from __future__ import annotations

import time

from letitloop.journal.duckdb.owner._base import OwnerBase
from letitloop.journal.duckdb.owner._conn import Conn, reply_to
from letitloop.journal.duckdb.owner._queue_saver import QueueSaver, load
from letitloop.journal.duckdb.owner._requests import BadRequest

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal._queue_board import QueueBoard

LAPSE_CHECK = 0.2  # seconds between looks for workers past their TTL
HOLD_CHECK = 2.0  # ... and for held runs whose process died while no owner was running
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


class QueueOps(OwnerBase):
    """The ``queue`` request and the board's upkeep (sessions gone, workers lapsed)."""

    board: QueueBoard
    saver: QueueSaver
    board_ready: bool
    board_parked: list[tuple[Conn, dict[str, Any]]]
    lapse_checked: float

    def _queue_request(self, conn: Conn, req: dict[str, Any], replies: list[Any]) -> None:
        # imported by the first queue request: an owner that serves no queue never loads them
        from letitloop.journal._queue_board import QueueBoard
        from letitloop.journal._queue_wire import item_from, spec_from, to_wire, worker_from
        from letitloop.journal._queues import OUTCOMES

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
        """Reply now if nothing changed, else once the saver committed the change."""
        items, queues = self.board.take_dirty()
        if items or queues:
            self.saver.put((conn, req, reply, items, queues))
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
        """Database thread: create the tables, load the board's rows, start the saver."""
        self.store.db.execute(TABLES)
        data = load(self.store.db)
        self.saver = QueueSaver(self.store.db.cursor(), self._send, self.wake_w)
        self.inbox.append(("qloaded", data))
        self.wake_w.send(b"x")


def _text(req: dict[str, Any], name: str) -> str:
    value = req.get(name)
    if not isinstance(value, str):
        raise BadRequest(f"request 'queue': field {name!r} must be text")
    return value
