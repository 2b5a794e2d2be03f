"""``OwnerJournal``'s queued runs: the ``queue`` request of the owner (see owner._queue).

An idle worker asks again after a short sleep rather than holding a request open: a claim is
answered from the owner's memory in well under a millisecond, so a few idle workers polling
every ``IDLE_POLL`` seconds cost the owner nothing that matters and claim within that time.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from letitloop.journal._queues import QueueInfo, QueueItem, QueueSpec, WorkerInfo

IDLE_POLL = 0.02  # seconds between an idle worker's claims


def _queues() -> ModuleType:
    """``journal._queues``, imported by the first queue call: a workflow's client never needs
    it (nor the typing its records import)."""
    from letitloop.journal import _queues

    return _queues


def _wire() -> ModuleType:
    """``journal._queue_wire``, imported by the first queue call, as ``_queues``."""
    from letitloop.journal import _queue_wire

    return _queue_wire


def _items(rows: list[list[Any]]) -> list[QueueItem]:
    rows = [[*r[:-1], *(r[-1] if r[-1] is not None else (None, None))] for r in rows]
    items: list[QueueItem] = _wire().items_of(rows)
    return items


class OwnerQueues:
    """The ``QueueJournal`` role over the owner's socket."""

    def _call(self, req: dict[str, Any], reply: bool = True) -> Any:
        raise NotImplementedError  # _connection

    def _q(self, act: str, **fields: Any) -> dict[str, Any]:
        return self._call({"op": "queue", "act": act, **fields})  # type: ignore[no-any-return]

    def enqueue(self, spec: QueueSpec, item: QueueItem) -> bool:
        _queues().check_spec(spec)  # a bad spec is the caller's ConfigError, said before sending
        w = _wire()
        return bool(self._q("enqueue", spec=w.to_wire(spec), item=w.to_wire(item))["new"])

    def claim(self, worker: WorkerInfo, n: int) -> list[QueueItem]:
        return _items(self._q("claim", worker=_wire().to_wire(worker), n=n)["items"])

    def beat_worker(self, worker: WorkerInfo) -> list[str]:
        return list(self._q("beat", worker=_wire().to_wire(worker))["lost"])

    def finish_item(self, worker: str, run_id: str, outcome: str) -> bool:
        return bool(self._q("finish", wid=worker, run=run_id, outcome=outcome)["done"])

    def leave_worker(self, worker: str) -> None:
        self._q("leave", wid=worker)

    def hold(self, spec: QueueSpec, item: QueueItem, *, declare: bool = False) -> None:
        _queues().check_spec(spec)
        w = _wire()
        self._q("hold", spec=w.to_wire(spec), item=w.to_wire(item), declare=declare)

    def unhold(self, run_id: str, outcome: str) -> None:
        self._q("unhold", run=run_id, outcome=outcome)

    def pause_queue(self, name: str, paused: bool) -> None:
        self._q("pause", name=name, paused=paused)

    def queues(self) -> list[QueueInfo]:
        q = _queues()
        return [
            q.QueueInfo(q.QueueSpec(*spec), *rest) for spec, *rest in self._q("queues")["queues"]
        ]

    def queue_items(
        self, *, queue: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[QueueItem]:
        return _items(self._q("items", queue=queue, state=state, limit=limit)["items"])

    def queue_item(self, run_id: str) -> QueueItem | None:
        row = self._q("item", run=run_id)["item"]
        return _items([row])[0] if row is not None else None

    def workers(self) -> list[WorkerInfo]:
        make = _queues().WorkerInfo._make
        return [
            make([*w[:3], tuple(w[3]), *w[4:9], tuple(w[9])]) for w in self._q("workers")["workers"]
        ]

    def wait_for_work(self, timeout: float) -> None:
        time.sleep(max(0.0, min(timeout, IDLE_POLL)))
