"""The memory journal's queued runs: ``QueueBoard`` under the store's lock (see journal._queues).

Workers of one process share a ``MemoryStore``; an idle worker waits on the store's condition,
which every write (an enqueue among them) notifies.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from letitloop.journal._queues import QueueInfo, QueueItem, QueueSpec, WorkerInfo

if TYPE_CHECKING:
    from letitloop.journal._memory import MemoryStore


class MemoryQueues:
    """The ``QueueJournal`` role of ``MemoryJournal``."""

    store: MemoryStore
    session: str

    def enqueue(self, spec: QueueSpec, item: QueueItem) -> bool:
        with self.store.cond:
            new = self.store.board.enqueue(spec, item)
            self.store.cond.notify_all()
            return new

    def claim(self, worker: WorkerInfo, n: int) -> list[QueueItem]:
        with self.store.cond:
            return self.store.board.claim(worker, n, time.time(), self.session)

    def beat_worker(self, worker: WorkerInfo) -> list[str]:
        with self.store.cond:
            return self.store.board.beat(worker, time.time(), self.session)

    def finish_item(self, worker: str, run_id: str, outcome: str) -> bool:
        with self.store.cond:
            done = self.store.board.finish(worker, run_id, outcome, time.time())
            self.store.cond.notify_all()
            return done

    def leave_worker(self, worker: str) -> None:
        with self.store.cond:
            self.store.board.leave(worker)
            self.store.cond.notify_all()

    def hold(self, spec: QueueSpec, item: QueueItem, *, declare: bool = False) -> None:
        with self.store.cond:
            self.store.board.hold(spec, item, self.session, time.time(), declare)

    def unhold(self, run_id: str, outcome: str) -> None:
        with self.store.cond:
            self.store.board.finish(self.session, run_id, outcome, time.time())
            self.store.cond.notify_all()

    def pause_queue(self, name: str, paused: bool) -> None:
        with self.store.cond:
            self.store.board.pause(name, paused)
            self.store.cond.notify_all()

    def queues(self) -> list[QueueInfo]:
        with self.store.cond:
            return self.store.board.infos(time.time())

    def queue_items(
        self, *, queue: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[QueueItem]:
        with self.store.cond:
            return self.store.board.list_items(queue, state, limit)

    def queue_item(self, run_id: str) -> QueueItem | None:
        with self.store.cond:
            return self.store.board.items.get(run_id)

    def workers(self) -> list[WorkerInfo]:
        with self.store.cond:
            return self.store.board.worker_infos(time.time())

    def wait_for_work(self, timeout: float) -> None:
        with self.store.cond:
            self.store.cond.wait(max(0.0, timeout))
