"""Queues and workers as people see them, once for every surface: what waits in each queue and
for how long, which worker holds which run and when it was last heard of, and the actions
(pause, resume, enqueue by name) with their true outcome.
"""

from __future__ import annotations

import json
import time
from typing import Any, NamedTuple

from letitloop.errors import ConfigError, LetItLoopError
from letitloop.journal import Journal, QueueInfo, QueueItem, WorkerInfo
from letitloop.operate._actions import Outcome
from letitloop.operate._format import ago, duration, local_time


class QueueSummary(NamedTuple):
    """One queue: its limits in words and what waits in it."""

    name: str
    paused: bool
    queued: int
    running: int  # claimed by a worker
    finished: int  # recently finished (what the journal keeps at hand)
    oldest_age: float | None  # seconds the oldest queued run has waited
    limits: str  # "8 at once, 2 per worker, 50/60s, by priority" or "no limits"
    info: QueueInfo


class WorkerSummary(NamedTuple):
    """One worker process: where it runs, what it holds, how long since it was heard of."""

    worker: str  # pid@host
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    runs: tuple[str, ...]
    heartbeat_age: float
    state: str  # running | draining | lapsed
    started: float


def limits_text(info: QueueInfo) -> str:
    s = info.spec
    parts = []
    if s.concurrency is not None:
        parts.append(f"{s.concurrency} at once")
    if s.per_worker is not None:
        parts.append(f"{s.per_worker} per worker")
    if s.limit is not None:
        parts.append(f"{s.limit} starts per {s.period:g} s")
    if s.priority:
        parts.append("by priority")
    return ", ".join(parts) or "no limits"


def queue_summaries(journal: Journal, now: float | None = None) -> list[QueueSummary]:
    now = time.time() if now is None else now
    return [
        QueueSummary(
            q.spec.name,
            q.paused,
            q.queued,
            q.claimed,
            q.finished,
            max(0.0, now - q.oldest) if q.oldest is not None else None,
            limits_text(q),
            q,
        )
        for q in journal.queues()
    ]


def worker_summaries(journal: Journal, now: float | None = None) -> list[WorkerSummary]:
    now = time.time() if now is None else now
    return [_worker(w, now) for w in journal.workers()]


def _worker(w: WorkerInfo, now: float) -> WorkerSummary:
    return WorkerSummary(
        w.worker.split("/", 1)[0],
        w.host,
        w.pid,
        w.queues,
        w.concurrency,
        w.runs,
        max(0.0, now - w.heartbeat),
        w.state,
        w.started,
    )


def find_queue(journal: Journal, name: str) -> QueueSummary:
    for q in queue_summaries(journal):
        if q.name == name:
            return q
    known = ", ".join(q.name for q in queue_summaries(journal)) or "none yet"
    raise ConfigError(
        f"no queue {name!r} in this journal (queues: {known})",
        fix="a queue exists once something was enqueued on it: Queue(name).enqueue(...) or "
        "`lil enqueue MODULE:FN ARGS --queue NAME`",
    )


def queue_json(q: QueueSummary) -> dict[str, Any]:
    s = q.info.spec
    return {
        "name": q.name,
        "paused": q.paused,
        "queued": q.queued,
        "running": q.running,
        "held": q.info.held,
        "finished": q.finished,
        "oldest_age": q.oldest_age,
        "oldest_shown": duration(q.oldest_age) if q.oldest_age is not None else None,
        "concurrency": s.concurrency,
        "per_worker": s.per_worker,
        "limit": s.limit,
        "period": s.period,
        "priority": s.priority,
        "limits_shown": q.limits,
    }


def worker_json(w: WorkerSummary) -> dict[str, Any]:
    return {
        "worker": w.worker,
        "host": w.host,
        "pid": w.pid,
        "queues": list(w.queues),
        "concurrency": w.concurrency,
        "runs": list(w.runs),
        "heartbeat_age": round(w.heartbeat_age, 3),
        "heartbeat_shown": ago(time.time() - w.heartbeat_age),
        "state": w.state,
        "started": w.started,
    }


def item_json(i: QueueItem) -> dict[str, Any]:
    return {
        "run_id": i.run_id,
        "queue": i.queue,
        "workflow": i.workflow,
        "state": i.state,
        "priority": i.priority,
        "enqueued": i.enqueued,
        "claimed_by": i.claimed_by.split("/", 1)[0] if i.claimed_by else None,
        "claimed_at": i.claimed_at,
        "claims": i.claims,
        "finished": i.finished,
        "outcome": i.outcome,
    }


class OrphanSummary(NamedTuple):
    """A run whose process died and that no worker takes over (it was not declared
    recoverable): what it is, how long it has waited, and the command that resumes it."""

    run_id: str
    workflow: str
    steps_done: int
    updated: float  # its last record
    idle: float  # seconds since then
    resumable: bool  # by name, in a fresh process (``resume_refusal``)
    command: str  # ``lil runs resume ID``, or what to do instead


def orphan_summaries(journal: Journal, limit: int = 20) -> list[OrphanSummary]:
    """Interrupted top-level runs that no queue item will hand to a worker, newest first."""
    from letitloop.kernel import resume_refusal

    recovering = {
        i.run_id for state in ("queued", "claimed", "held")
        for i in journal.queue_items(state=state, limit=10_000)
    }  # fmt: skip
    now = time.time()
    out: list[OrphanSummary] = []
    for info in journal.list_runs(status="interrupted", limit=limit * 2):
        if info.parent is not None or info.run_id in recovering or len(out) >= limit:
            continue
        try:
            refusal = resume_refusal(journal.get_run(info.run_id))
        except LetItLoopError as exc:
            refusal = exc
        command = f"lil runs resume {info.run_id}"
        if refusal is not None:
            command = refusal.fix or refusal.message
        idle = max(0.0, now - info.updated)
        out.append(
            OrphanSummary(
                info.run_id,
                info.workflow,
                info.steps_done,
                info.updated,
                idle,
                refusal is None,
                command,
            )
        )
    return out


def orphan_json(o: OrphanSummary) -> dict[str, Any]:
    """An orphan as JSON: its last record's time (not an age: the same answer twice reads the
    same)."""
    return {
        "run_id": o.run_id,
        "workflow": o.workflow,
        "steps_done": o.steps_done,
        "updated": o.updated,
        "updated_shown": local_time(o.updated),
        "resumable": o.resumable,
        "command": o.command,
    }


class WorkflowQueue(NamedTuple):
    """A workflow's runs on one queue that are not finished: what an editor lens says of it."""

    queue: str
    queued: int
    running: int  # claimed by workers
    held: int  # recoverable runs executing in their callers
    holders: tuple[str, ...]  # the workers (pid@host) running them


def queued_by_workflow(journal: Journal, limit: int = 10_000) -> dict[str, list[WorkflowQueue]]:
    """Each workflow's unfinished queue items, by queue (an editor's lens on the function)."""
    counts: dict[tuple[str, str], list[Any]] = {}
    for state in ("queued", "claimed", "held"):
        for i in journal.queue_items(state=state, limit=limit):
            c = counts.setdefault((i.workflow, i.queue), [0, 0, 0, set()])
            c[("queued", "claimed", "held").index(state)] += 1
            if state == "claimed" and i.claimed_by:
                c[3].add(i.claimed_by.split("/", 1)[0])
    out: dict[str, list[WorkflowQueue]] = {}
    for (workflow, queue), (q, r, h, who) in sorted(counts.items()):
        out.setdefault(workflow, []).append(WorkflowQueue(queue, q, r, h, tuple(sorted(who))))
    return out


def fleet_json(journal: Journal) -> dict[str, Any]:
    """Queues, workers (with the runs each holds) and orphans: what every surface's queues view
    shows (``lil queue list --json``, the lab, ``lil mcp``)."""
    return {
        "queues": [queue_json(q) for q in queue_summaries(journal)],
        "workers": [worker_json(w) for w in worker_summaries(journal)],
        "orphans": [orphan_json(o) for o in orphan_summaries(journal)],
    }


def holders(journal: Journal) -> dict[str, str]:
    """Which worker (pid@host) holds each claimed run: for run lists and lenses."""
    return {run: w.worker.split("/", 1)[0] for w in journal.workers() for run in w.runs}


def pause_queue(journal: Journal, name: str, *, paused: bool = True) -> Outcome:
    """Stop (or let) workers claim from a queue; runs already claimed go on."""
    q = find_queue(journal, name)
    journal.pause_queue(name, paused)
    if paused:
        message = (
            f"paused {name}: no worker takes its {q.queued} queued runs until `lil queue resume "
            f"{name}` ({q.running} running go on)"
        )
    else:
        message = f"resumed {name}: workers take its {q.queued} queued runs again"
    return Outcome("pause" if paused else "resume", message, None, {"queue": name})


def parse_arguments(values: tuple[str, ...]) -> list[Any]:
    """``lil enqueue`` arguments: each a JSON value, else taken as text (``42`` is a number,
    ``'"42"'`` and ``abc`` are text)."""
    out: list[Any] = []
    for v in values:
        try:
            out.append(json.loads(v))
        except ValueError:
            out.append(v)
    return out


def enqueue_by_name(
    target: str,
    args: list[Any],
    *,
    queue: str,
    key: str | None = None,
    priority: int = 0,
    journal: str | None = None,
) -> Outcome:
    """``lil enqueue MODULE:FN ARGS``: import the workflow (the caller's own code, as
    ``python -m`` would) and queue a call of it."""
    from letitloop.kernel import Queue, load_entry

    if ":" not in target:
        raise ConfigError(
            f"{target!r} does not name a workflow",
            fix="write MODULE:FUNCTION, e.g. `lil enqueue pipeline:embed 42`",
        )
    fn = load_entry(target, target)
    from letitloop.kernel import resolve_journal

    known = {q.spec.name: q.spec for q in resolve_journal(journal).queues()}
    s = known.get(queue)  # the queue's own limits stay as its Queue(...) declared them
    q = (
        Queue(queue, journal=journal)
        if s is None
        else Queue(
            queue,
            concurrency=s.concurrency,
            per_worker=s.per_worker,
            limit=(s.limit, s.period) if s.limit is not None else None,
            priority=s.priority,
            journal=journal,
        )
    )
    handle = q.enqueue(fn, *args, key=key, priority=priority)
    status = handle.status()
    if handle.new:
        message = f"queued {handle.run_id} on {queue}: `lil worker --queue {queue}` runs it"
    else:
        message = f"{handle.run_id} was queued before ({status} now): not queued again"
    facts = {"queue": queue, "status": status, "new": handle.new}
    return Outcome("enqueue", message, handle.run_id, facts)
