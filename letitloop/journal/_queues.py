"""Queued runs and the workers that take them: the records, and the board that decides claims.

A queue item is a run that waits for a worker: its id, workflow, run key and the entry point and
arguments the enqueuer signed with the journal's key (a worker imports nothing else). A worker
*claims* items (up to its free slots), executes each run by its entry point under the run's
lease, and *finishes* the item with the run's outcome, or releases it (a graceful drain). A
worker that stops heartbeating for its TTL has *lapsed*: its claims may be taken by another
worker, and on the DuckDB owner its run leases are revoked so it is fenced when it wakes.

A *held* item is a recoverable run executing in its caller's process (``@durable(recover=...)``,
``workflow.start``): the process's journal session holds it while the process holds the run's
lease. When that process dies (on DuckDB: its connections close; on PostgreSQL: its run lease is
no longer alive) the item goes back to the queue, and a worker takes the run over.

``QueueBoard`` holds a journal's queues, items and workers in memory and makes every decision
(order, pause, concurrency fleet-wide and per worker, the start-rate limit, lapsed claims). The
memory journal uses it as is; the DuckDB owner uses it too and persists the items it changed;
PostgreSQL makes the same decisions in SQL (``postgres._queues``).
"""

# no ``from __future__ import annotations``: NamedTuple fields are evaluated, see _contract
import os
from collections import deque
from collections.abc import Iterable
from typing import NamedTuple, Protocol

from letitloop.errors import ConfigError, JournalError, LeaseLostError
from letitloop.journal._records import check_text

Encoded = tuple[str, bytes]

ITEM_STATES = frozenset({"queued", "claimed", "held", "finished"})
OUTCOMES = frozenset({"completed", "failed", "cancelled", "suspended", "stopped", "released"})
MAX_NAME = 200  # a queue's name: short text people type
MAX_CONCURRENCY = 100_000
MAX_CLAIM = 1_000  # items one claim may take
DEFAULT_TTL = 30.0
# what one journal's board holds in memory at most (a hostile or runaway enqueuer is refused)
MAX_ITEMS = 1_000_000  # queued or claimed runs
MAX_BOARD_BYTES = 512 << 20  # their entry points and arguments
KEEP_FINISHED = 50_000  # finished items kept for status and dedup; older ones are forgotten
MAX_WORKERS = 10_000
MAX_QUEUES = 10_000


class QueueSpec(NamedTuple):
    """A queue's settings, as ``Queue(...)`` declares them (the latest declaration wins)."""

    name: str
    concurrency: int | None = None  # runs of this queue executing at once, fleet-wide
    per_worker: int | None = None  # ... on one worker
    limit: int | None = None  # runs started per ``period`` seconds, fleet-wide
    period: float = 60.0
    priority: bool = False  # order by each item's priority (lower first), then by age


class QueueItem(NamedTuple):
    """One queued run and where it stands."""

    run_id: str
    queue: str
    workflow: str
    key: str
    priority: int
    state: str  # queued | claimed | held (by its caller's process) | finished
    enqueued: float
    claimed_by: str | None = None  # the worker that holds it (held: the caller's session)
    claimed_at: float | None = None
    claims: int = 0  # executions handed out (a claim, a hold); more than one: a takeover
    finished: float | None = None
    outcome: str | None = None  # completed | failed | cancelled | suspended | stopped
    entry: str | None = None  # the signed entry point (see kernel._entry)
    args: Encoded | None = None


class QueueInfo(NamedTuple):
    """A queue's settings and what waits in it now."""

    spec: QueueSpec
    paused: bool
    queued: int
    claimed: int
    finished: int
    oldest: float | None  # when the oldest queued item was enqueued
    held: int = 0  # recoverable runs executing in their callers' processes


class WorkerInfo(NamedTuple):
    """A worker process as the journal last heard of it."""

    worker: str  # pid@host/random
    host: str
    pid: int
    queues: tuple[str, ...]  # empty: every queue
    concurrency: int
    started: float
    heartbeat: float
    ttl: float
    state: str  # running | draining | lapsed
    runs: tuple[str, ...] = ()  # the runs it holds


class QueueJournal(Protocol):
    """Queued runs and workers, a role of the ``Journal`` contract: enqueue, claim, heartbeat,
    finish; and the recoverable runs a process holds while it executes them."""

    journal_id: str
    location: str

    def enqueue(self, spec: QueueSpec, item: QueueItem) -> bool:
        """Queue a run durably (declaring the queue); False if that run was queued before."""
        ...

    def claim(self, worker: WorkerInfo, n: int) -> list[QueueItem]:
        """Heartbeat ``worker`` and claim up to ``n`` runs for it (queued, held by a worker
        that lapsed, or held by a process that died), within each queue's pause and limits."""
        ...

    def beat_worker(self, worker: WorkerInfo) -> list[str]:
        """Heartbeat ``worker``; the runs of ``worker.runs`` it no longer holds (taken over)."""
        ...

    def finish_item(self, worker: str, run_id: str, outcome: str) -> bool:
        """Finish a claimed run with its outcome, or ``released``: back to the queue."""
        ...

    def leave_worker(self, worker: str) -> None: ...  # what it holds goes back to the queue

    def hold(self, spec: QueueSpec, item: QueueItem, *, declare: bool = False) -> None:
        """A recoverable run this journal's process executes (it holds the run's lease): held
        by this journal's session until ``unhold``; if the process dies first, the run goes
        back to the queue for a worker. ``declare``: the spec's limits replace the queue's
        (else a missing queue is created with them)."""
        ...

    def unhold(self, run_id: str, outcome: str) -> None:
        """This process is done with a run it held: its item is finished with ``outcome``."""
        ...

    def pause_queue(self, name: str, paused: bool) -> None: ...
    def queues(self) -> list[QueueInfo]: ...

    def queue_items(
        self, *, queue: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[QueueItem]: ...

    def queue_item(self, run_id: str) -> QueueItem | None: ...
    def workers(self) -> list[WorkerInfo]: ...

    def wait_for_work(self, timeout: float) -> None:
        """Return when a run may have been queued (or at ``timeout``): idle workers sleep here."""
        ...


def check_spec(spec: QueueSpec) -> QueueSpec:
    """The spec if every value is sane; a clear ConfigError otherwise."""
    check_text(spec.name, "a queue's name", ConfigError)
    if not spec.name or len(spec.name) > MAX_NAME:
        raise ConfigError(
            f"a queue's name must be 1 to {MAX_NAME} characters, got {len(spec.name)}",
            fix="name the queue with a short word, e.g. Queue('embeddings')",
        )
    for what, value in (("concurrency", spec.concurrency), ("per_worker", spec.per_worker)):
        if value is not None and (type(value) is not int or not 1 <= value <= MAX_CONCURRENCY):
            raise ConfigError(
                f"queue {spec.name!r}: {what}={value!r} must be a whole number from 1 to "
                f"{MAX_CONCURRENCY}, or None for no limit",
                fix=f"pass {what}=8 (or leave it out)",
            )
    if spec.limit is not None and (type(spec.limit) is not int or not 1 <= spec.limit <= 10**9):
        raise ConfigError(
            f"queue {spec.name!r}: limit={spec.limit!r} must be a positive whole number",
            fix="pass limit=(50, 60) for at most 50 runs started a minute",
        )
    if not isinstance(spec.period, (int, float)) or not 0.001 <= spec.period <= 86400 * 7:
        raise ConfigError(
            f"queue {spec.name!r}: the limit's period {spec.period!r} must be seconds, from "
            "0.001 to a week",
            fix="pass limit=(50, 60) for at most 50 runs started a minute",
        )
    return spec


def fenced_error(run_id: str, holder: str | None) -> LeaseLostError:
    """A lapsed worker's write after its lease was revoked (DuckDB; PostgreSQL says the same
    with its lease token)."""
    return LeaseLostError(
        f"this process lost its lease on run {run_id}: it sent no heartbeat for longer than its "
        f"TTL, so the run went back to the queue ({holder or 'nobody'} holds it now); nothing "
        "was written, and this process stops executing the run",
        fix="let the new holder finish; if this worker was only slow, raise LIL_LEASE_TTL "
        "(seconds) for every worker",
        run_id=run_id,
    )


def process_alive(label: str) -> bool:
    """Whether the process 'pid@host' is alive; a process on another host is assumed gone."""
    import os
    import socket

    pid, _, host = label.partition("@")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_of(session: str | None) -> str:
    """A session or worker id ('pid@host/random') as people see it: 'pid@host'."""
    return (session or "").split("/", 1)[0]


def worker_id() -> str:
    """A new worker's id: ``pid@host/random`` (people see ``pid@host``)."""
    import socket

    return f"{os.getpid()}@{socket.gethostname()}/{os.urandom(4).hex()}"


def bounded_ttl(ttl: float) -> float:
    return min(3600.0, max(0.2, float(ttl)))


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
        self.open_items = 0  # queued or claimed
        self.open_bytes = 0
        self.finished_order: deque[str] = deque()

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
        self.open_items += 1
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
            self.open_items += 1
            self.open_bytes += size
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
            for i in self.items.values()
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
        """Register or refresh a worker; return the runs it believes it holds but does not."""
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
        return [r for r in worker.runs if r not in held]

    def held_by(self, worker: str) -> set[str]:
        return {
            i.run_id for i in self.items.values() if i.state == "claimed" and i.claimed_by == worker
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
        for item in self.items.values():
            if item.queue not in wanted or item.state in ("finished", "held"):
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
            self.open_items -= 1
            self.open_bytes -= _size(item)
            self.finished_order.append(run_id)
            while len(self.finished_order) > KEEP_FINISHED:
                old = self.finished_order.popleft()
                if old in self.items and self.items[old].state == "finished":
                    del self.items[old]
        self.items[run_id] = new
        self.dirty.add(run_id)
        return True

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
            i.run_id for i in self.items.values() if i.state == "held" and i.claimed_by == session
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
        oldest: dict[str, float] = {}
        for item in self.items.values():
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
        rows = [
            i
            for i in self.items.values()
            if (queue is None or i.queue == queue) and (state is None or i.state == state)
        ]
        order = ("claimed", "held", "queued", "finished")
        rows.sort(key=lambda i: (order.index(i.state), i.enqueued))
        return rows[: max(0, limit)]

    def worker_infos(self, now: float) -> list[WorkerInfo]:
        held: dict[str, list[str]] = {}
        for item in self.items.values():
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
                self.finished_order.append(item.run_id)
            else:
                self.open_items += 1
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
