"""Queued runs and the workers that take them: the records, their bounds and the role.

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

``journal._queue_board`` makes the decisions in memory (the memory journal, the DuckDB owner);
PostgreSQL makes them in SQL (``postgres._queues``); ``journal._queue_wire`` checks what the
owner's clients send.
"""

# no ``from __future__ import annotations``: NamedTuple fields are evaluated, see _contract
import os
from typing import NamedTuple

from letitloop.errors import ConfigError, LeaseLostError
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
