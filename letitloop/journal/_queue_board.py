"""``QueueBoard``: every queue, item and worker of one journal in memory, and the claim
decisions (order, pause, concurrency fleet-wide and per worker, the start-rate limit, lapsed
workers, held runs whose process died). The memory journal uses it as is; the DuckDB owner uses it
in its event loop and persists what changed; PostgreSQL makes the same decisions in SQL
(``postgres._queues``). The records it holds are ``journal._queues``'.

Only the unfinished items are looked at to claim (``open``), and finished ones are counted as
they finish, so a claim costs what is queued and running, not the 50,000 finished items kept
for status and dedup.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from letitloop.errors import JournalError
from letitloop.journal._queues import (
    DEFAULT_TTL,
    KEEP_FINISHED,
    MAX_BOARD_BYTES,
    MAX_CLAIM,
    MAX_ITEMS,
    MAX_QUEUES,
    MAX_WORKERS,
    OUTCOMES,
    QueueInfo,
    QueueItem,
    QueueSpec,
    WorkerInfo,
    bounded_ttl,
    check_spec,
    holder_of,
    process_alive,
)


class QueueBoard:
    """Every queue, item and worker of one journal, and the claim decisions. Not thread-safe:
    its owner (the memory journal's lock, the DuckDB owner's event loop) serializes calls.
    ``dirty`` and ``dirty_queues`` name what changed since the caller last persisted it."""

    def __init__(self) -> None:
        self.queues: dict[str, QueueSpec] = {}
        self.paused: set[str] = set()
        self.items: dict[str, QueueItem] = {}
        self.workers: dict[str, WorkerInfo] = {}
        self.sessions: dict[str, str] = {}  # worker -> the connection session that runs it
        self.starts: dict[str, deque[float]] = {}
        self.dirty: set[str] = set()
        self.dirty_queues: set[str] = set()
        self.open: dict[str, None] = {}  # the unfinished items (queued, claimed, held), in order
        self.open_bytes = 0
        self.finished_count: dict[str, int] = {}  # per queue
        self.finished_order: deque[str] = deque()

    @property
    def open_items(self) -> int:
        return len(self.open)

    def _open_items(self) -> list[QueueItem]:
        items = self.items
        return [items[r] for r in self.open]

    # -- what enqueuers and people do ----------------------------------------------------

    def declare(self, spec: QueueSpec) -> None:
        check_spec(spec)
        if spec.name not in self.queues and len(self.queues) >= MAX_QUEUES:
            raise JournalError(f"this journal has {MAX_QUEUES} queues: no more can be declared")
        if self.queues.get(spec.name) != spec:
            self.queues[spec.name] = spec
            self.dirty_queues.add(spec.name)

    def pause(self, name: str, paused: bool) -> None:
        if name not in self.queues:
            raise JournalError(
                f"no queue {name!r} in this journal",
                fix="`lil queue list` shows the queues (a queue exists once something was "
                "enqueued on it)",
            )
        (self.paused.add if paused else self.paused.discard)(name)
        self.dirty_queues.add(name)

    def enqueue(self, spec: QueueSpec, item: QueueItem) -> bool:
        """Add ``item`` (state queued); False if its run is already queued or was (dedup)."""
        self.declare(spec)
        if item.run_id in self.items:
            return False
        size = _size(item)
        if self.open_items >= MAX_ITEMS or self.open_bytes + size > MAX_BOARD_BYTES:
            raise JournalError(
                f"the journal's queues hold {self.open_items} unfinished runs "
                f"({self.open_bytes >> 20} MB): no more can be queued now",
                fix="start more workers (`lil worker`) or wait for the queues to drain",
            )
        self.items[item.run_id] = item._replace(
            queue=spec.name, state="queued", claimed_by=None, claimed_at=None, finished=None,
            outcome=None,
        )  # fmt: skip
        self.open[item.run_id] = None
        self.open_bytes += size
        self.dirty.add(item.run_id)
        return True

    def hold(
        self, spec: QueueSpec, item: QueueItem, session: str, now: float, declare: bool = False
    ) -> None:
        """A recoverable run executing in the process of ``session``, which holds its lease: the
        item is held by that session (whatever it was: the lease says who executes the run).
        ``declare``: the spec's limits replace the queue's; else a missing queue is created."""
        if declare or spec.name not in self.queues:
            self.declare(spec)
        old = self.items.get(item.run_id)
        reopened = old is None or old.state == "finished"
        size = _size(item)
        if reopened and (self.open_items >= MAX_ITEMS or self.open_bytes + size > MAX_BOARD_BYTES):
            raise JournalError(
                f"the journal's queues hold {self.open_items} unfinished runs: run "
                f"{item.run_id} cannot be made recoverable now",
                fix="start more workers (`lil worker`) or wait for the queues to drain",
            )
        if reopened:
            self.open[item.run_id] = None
            self.open_bytes += size
            if old is not None:  # finished before: no longer counted as finished
                self.finished_count[old.queue] = self.finished_count.get(old.queue, 1) - 1
        self.items[item.run_id] = item._replace(
            queue=spec.name, state="held", claimed_by=session, claimed_at=now,
            claims=(old.claims if old is not None else 0) + 1,
            enqueued=old.enqueued if old is not None and not reopened else now,
            finished=None, outcome=None,
        )  # fmt: skip
        self.dirty.add(item.run_id)

    def orphaned_holds(self, connected: set[str]) -> list[str]:
        """Held items whose session is not connected and whose process is gone (the owner
        restarted, and their process died before it came back): back to the queue."""
        freed = [
            i.run_id
            for i in self._open_items()
            if i.state == "held"
            and i.claimed_by not in connected
            and not process_alive(holder_of(i.claimed_by))
        ]
        for run_id in freed:
            self._requeue(run_id)
        return freed

    def _requeue(self, run_id: str) -> None:
        self.items[run_id] = self.items[run_id]._replace(
            state="queued", claimed_by=None, claimed_at=None
        )
        self.dirty.add(run_id)

    # -- what workers do -----------------------------------------------------------------

    def beat(self, worker: WorkerInfo, now: float, session: str | None = None) -> list[str]:
        """Register or refresh a worker; return the runs it believes it holds but does not
        (taken over or given back; not those it finished itself since it said what it holds)."""
        old = self.workers.get(worker.worker)
        if old is None and len(self.workers) >= MAX_WORKERS:
            self._forget_lapsed(now)
            if len(self.workers) >= MAX_WORKERS:
                raise JournalError(f"this journal has {MAX_WORKERS} workers: no more may join")
        started = old.started if old is not None else worker.started
        state = "draining" if worker.state == "draining" else "running"
        held = self.held_by(worker.worker)
        self.workers[worker.worker] = worker._replace(
            started=started, heartbeat=now, ttl=bounded_ttl(worker.ttl), state=state
        )
        if session is not None:
            self.sessions[worker.worker] = session
        return [r for r in worker.runs if r not in held and not self._finished_by(r, worker.worker)]

    def _finished_by(self, run_id: str, worker: str) -> bool:
        item = self.items.get(run_id)
        return item is not None and item.state == "finished" and item.claimed_by == worker

    def held_by(self, worker: str) -> set[str]:
        return {
            i.run_id for i in self._open_items() if i.state == "claimed" and i.claimed_by == worker
        }

    def lapsed(self, worker: str | None, now: float) -> bool:
        w = self.workers.get(worker) if worker is not None else None
        return w is None or now - w.heartbeat > w.ttl

    def claim(
        self, worker: WorkerInfo, n: int, now: float, session: str | None = None
    ) -> list[QueueItem]:
        """Claim up to ``n`` items for ``worker`` from its queues (all when it names none):
        queued ones and those a lapsed worker held, oldest first (by priority first on a
        priority queue), within each queue's pause, limits and start rate."""
        self.beat(worker, now, session)
        if worker.state == "draining" or n <= 0:
            return []
        n = min(n, MAX_CLAIM)
        wanted = set(worker.queues) if worker.queues else set(self.queues)
        live: dict[str, int] = {}
        mine: dict[str, int] = {}
        candidates: list[QueueItem] = []
        for item in self._open_items():
            if item.queue not in wanted or item.state == "held":
                continue
            if item.state == "claimed" and not self.lapsed(item.claimed_by, now):
                live[item.queue] = live.get(item.queue, 0) + 1
                if item.claimed_by == worker.worker:
                    mine[item.queue] = mine.get(item.queue, 0) + 1
            else:
                candidates.append(item)
        candidates.sort(key=lambda i: (self._order(i), i.enqueued, i.run_id))
        taken: list[QueueItem] = []
        for item in candidates:
            if len(taken) >= n:
                break
            spec = self.queues.get(item.queue) or QueueSpec(item.queue)
            if item.queue in self.paused:
                continue
            if spec.concurrency is not None and live.get(item.queue, 0) >= spec.concurrency:
                continue
            if spec.per_worker is not None and mine.get(item.queue, 0) >= spec.per_worker:
                continue
            if spec.limit is not None and not self._may_start(spec, now):
                continue
            new = item._replace(
                state="claimed", claimed_by=worker.worker, claimed_at=now, claims=item.claims + 1
            )
            self.items[item.run_id] = new
            self.dirty.add(item.run_id)
            live[item.queue] = live.get(item.queue, 0) + 1
            mine[item.queue] = mine.get(item.queue, 0) + 1
            taken.append(new)
        return taken

    def _order(self, item: QueueItem) -> int:
        spec = self.queues.get(item.queue)
        return item.priority if spec is not None and spec.priority else 0

    def _may_start(self, spec: QueueSpec, now: float) -> bool:
        starts = self.starts.setdefault(spec.name, deque())
        while starts and starts[0] <= now - spec.period:
            starts.popleft()
        if spec.limit is not None and len(starts) >= spec.limit:
            return False
        starts.append(now)
        return True

    def finish(self, worker: str, run_id: str, outcome: str, now: float) -> bool:
        """The worker is done with the run: finished with ``outcome``, or ``released`` back to
        the queue. False (nothing changes) if the worker no longer holds it."""
        if outcome not in OUTCOMES:
            raise JournalError(f"a queue item's outcome must be one of {sorted(OUTCOMES)}")
        item = self.items.get(run_id)
        if item is None or item.state not in ("claimed", "held") or item.claimed_by != worker:
            return False
        if outcome == "released":
            new = item._replace(state="queued", claimed_by=None, claimed_at=None)
        else:
            new = item._replace(state="finished", finished=now, outcome=outcome)
            self.open.pop(run_id, None)
            self.open_bytes -= _size(item)
            self._finished(new)
        self.items[run_id] = new
        self.dirty.add(run_id)
        return True

    def _finished(self, item: QueueItem) -> None:
        """Count a finished item; forget the oldest ones beyond ``KEEP_FINISHED``."""
        self.finished_count[item.queue] = self.finished_count.get(item.queue, 0) + 1
        self.finished_order.append(item.run_id)
        while len(self.finished_order) > KEEP_FINISHED:
            old = self.items.get(self.finished_order.popleft())
            if old is not None and old.state == "finished":
                del self.items[old.run_id]
                self.finished_count[old.queue] -= 1

    def _forget_lapsed(self, now: float) -> None:
        for w in list(self.workers.values()):
            if now - w.heartbeat > max(w.ttl, 600.0) and not self.held_by(w.worker):
                del self.workers[w.worker]
                self.sessions.pop(w.worker, None)

    def leave(self, worker: str) -> list[str]:
        """A worker is gone (it said so, or its process's connections closed): its claims go
        back to the queue at once. Returns their runs."""
        self.workers.pop(worker, None)
        self.sessions.pop(worker, None)
        freed = sorted(self.held_by(worker))
        for run_id in freed:
            self.items[run_id] = self.items[run_id]._replace(
                state="queued", claimed_by=None, claimed_at=None
            )
            self.dirty.add(run_id)
        return freed

    def leave_session(self, session: str) -> list[str]:
        """Every worker that ran on this connection session is gone, and so is the process that
        held its recoverable runs: their items go back to the queue."""
        freed: list[str] = []
        for worker, s in list(self.sessions.items()):
            if s == session:
                freed += self.leave(worker)
        held = [
            i.run_id for i in self._open_items() if i.state == "held" and i.claimed_by == session
        ]
        for run_id in held:
            self._requeue(run_id)
        return freed + held

    def newly_lapsed(self, now: float) -> list[tuple[WorkerInfo, str | None, list[str]]]:
        """Workers whose TTL ran out since they last beat: they stay listed (as lapsed), their
        claims go back to the queue. Each with its session and the runs it held."""
        out = []
        for w in list(self.workers.values()):
            if w.state != "lapsed" and now - w.heartbeat > w.ttl:
                self.workers[w.worker] = w._replace(state="lapsed")
                freed = sorted(self.held_by(w.worker))
                for run_id in freed:
                    self.items[run_id] = self.items[run_id]._replace(
                        state="queued", claimed_by=None, claimed_at=None
                    )
                    self.dirty.add(run_id)
                out.append((w, self.sessions.get(w.worker), freed))
        return out

    # -- what people read ---------------------------------------------------------------

    def infos(self, now: float) -> list[QueueInfo]:
        counts: dict[str, list[int]] = {name: [0, 0, 0, 0] for name in self.queues}
        for name, n in self.finished_count.items():
            counts.setdefault(name, [0, 0, 0, 0])[2] = n
        oldest: dict[str, float] = {}
        for item in self._open_items():
            c = counts.setdefault(item.queue, [0, 0, 0, 0])
            c[("queued", "claimed", "finished", "held").index(item.state)] += 1
            if item.state == "queued" and item.enqueued < oldest.get(item.queue, float("inf")):
                oldest[item.queue] = item.enqueued
        return [
            QueueInfo(
                self.queues.get(name) or QueueSpec(name),
                name in self.paused,
                c[0],
                c[1],
                c[2],
                oldest.get(name),
                c[3],
            )
            for name, c in sorted(counts.items())
        ]

    def list_items(self, queue: str | None, state: str | None, limit: int) -> list[QueueItem]:
        pool = self.items.values() if state in (None, "finished") else self._open_items()
        rows = [
            i
            for i in pool
            if (queue is None or i.queue == queue) and (state is None or i.state == state)
        ]
        order = ("claimed", "held", "queued", "finished")
        rows.sort(key=lambda i: (order.index(i.state), i.enqueued))
        return rows[: max(0, limit)]

    def worker_infos(self, now: float) -> list[WorkerInfo]:
        held: dict[str, list[str]] = {}
        for item in self._open_items():
            if item.state == "claimed" and item.claimed_by is not None:
                held.setdefault(item.claimed_by, []).append(item.run_id)
        return [
            w._replace(
                runs=tuple(sorted(held.get(w.worker, ()))),
                state="lapsed" if now - w.heartbeat > w.ttl else w.state,
            )
            for w in sorted(self.workers.values(), key=lambda w: w.started)
        ]

    # -- persistence (the DuckDB owner) --------------------------------------------------

    def take_dirty(self) -> tuple[list[QueueItem], list[tuple[QueueSpec, bool]]]:
        items = [self.items[r] for r in sorted(self.dirty) if r in self.items]
        queues = [(self.queues[q], q in self.paused) for q in sorted(self.dirty_queues)]
        self.dirty.clear()
        self.dirty_queues.clear()
        return items, queues

    def load(
        self, queues: Iterable[tuple[QueueSpec, bool]], items: Iterable[QueueItem], now: float
    ) -> None:
        """Start from what was persisted. The holders of claimed items get one TTL from now
        to beat again before their claims may be taken (the owner restarted under them)."""
        for spec, paused in queues:
            self.queues[spec.name] = spec
            if paused:
                self.paused.add(spec.name)
        for item in items:
            self.items[item.run_id] = item
            if item.state == "finished":
                self._finished(item)
            else:
                self.open[item.run_id] = None
                self.open_bytes += _size(item)
            if item.state == "held" and not process_alive(holder_of(item.claimed_by)):
                self._requeue(item.run_id)  # its process died while no owner was running
            elif (
                item.state == "claimed" and item.claimed_by and item.claimed_by not in self.workers
            ):
                pid, _, host = holder_of(item.claimed_by).partition("@")
                self.workers[item.claimed_by] = WorkerInfo(
                    item.claimed_by,
                    host,
                    int(pid) if pid.isdigit() else 0,
                    (),
                    0,
                    now,
                    now,
                    DEFAULT_TTL,
                    "running",
                )


def _size(item: QueueItem) -> int:
    return 200 + len(item.entry or "") + (len(item.args[1]) if item.args else 0)
