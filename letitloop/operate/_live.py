"""A run's summary moved forward by the journal's events, without reading the journal again.

A live surface (lil-tui's runs screen, on a journal of ten thousand runs) receives the events
the owner pushes and must show a run's new status, step and time within milliseconds: it folds
each run's new events into the summary it already has, and reads the run in full (costs, exact
counts, who holds it) only once its events pause. The fold lives here, beside the summaries it
moves, and counts time as the journal does (``RunInfo.active_seconds``): a try lasts from its
``run`` record to the last record its own process wrote, and the time between tries, or after a
killed process's last record, never counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from letitloop.journal import ACTIVE_KINDS
from letitloop.operate._runs import RunSummary, _dead_error, actions_for

if TYPE_CHECKING:
    from letitloop.journal import EventInfo


def advance(run: RunSummary | None, events: Sequence[EventInfo]) -> RunSummary | None:
    """``run`` moved forward by ``events`` (its own, oldest first). A run seen for the first time
    (``run`` None) starts at its ``run`` record or a graph thread's first checkpoint; without
    one, None says: read the run instead. Costs, tokens and who holds it come with that read."""
    moved = False
    for e in events:
        if run is None:
            if e.kind == "lgwrite":
                continue  # a node's pending writes may be pushed before its thread's first put
            if e.kind not in ("run", "lgput"):
                return None  # a run whose start this surface never saw
            run, moved = _first(e), True
            continue
        after = _moved(run, e)
        moved = moved or after is not run
        run = after
    if run is None or not moved:
        return run
    return run._replace(actions=actions_for(run))


def _first(e: EventInfo) -> RunSummary:
    d = e.data
    checkpoint = int(e.kind == "lgput")  # a thread's first checkpoint counts as a step
    workflow, _, key = e.run_id.partition(":")
    return RunSummary(
        run_id=e.run_id,
        workflow=str(d.get("wf") or workflow),
        key=str(d.get("key") or key),
        status=str(d.get("status") or "running"),
        epoch=_int(d.get("epoch")),
        attempt=_int(d.get("try")),
        created=e.ts,
        updated=e.ts,
        steps_done=checkpoint,
        steps_total=checkpoint,
        current_step=None,
        holder=None,
        parent=d.get("parent") if isinstance(d.get("parent"), str) else None,
        error=None,
        seconds=0.0,
        cost_micros=0,
        tokens=0,
        saved_micros=0,
        budget=None,
        waiting=0,
        dead_letter=False,
        forked_from=None,
        actions=(),
    )


def _moved(run: RunSummary, e: EventInfo) -> RunSummary:
    """``run`` after one more of its events (the same summary when the event changes nothing
    a summary shows: a decision, a budget, a cache write)."""
    d, k = e.data, e.kind
    status, current, error, dead = run.status, run.current_step, run.error, run.dead_letter
    done, total, epoch, attempt = run.steps_done, run.steps_total, run.epoch, run.attempt
    seconds = run.seconds
    if k in ACTIVE_KINDS and status == "running" and seconds is not None:
        seconds += max(0.0, e.ts - run.updated)
    if k == "run":
        status, error, dead = "running", None, False
        attempt = max(attempt, _int(d.get("try")))
    elif k == "step" and e.position is not None:
        status, current, total = "running", e.name or "?", max(total, e.position + 1)
    elif k in ("ok", "err") and e.position is not None:
        current, total = None, max(total, e.position + 1)
        done = min(done + (k == "ok"), total)
    elif k == "rewind":  # the code changed: that step and later ones run again
        current = None
    elif k == "done":
        status, current, error, total = "completed", None, None, max(total, done)
    elif k == "fail":  # a current step is named only while a run runs, on every backend
        error = d.get("err") if isinstance(d.get("err"), dict) else None
        status, current, dead = "failed", None, _dead_error(error)
    elif k == "suspend":
        status, current = "suspended", None
    elif k == "reset":  # a new epoch, no try yet
        status, current, error, dead, done, total = "reset", None, None, False, 0, 0
        epoch, attempt, seconds = _int(d.get("epoch")) or epoch + 1, 0, 0.0
    elif k == "cancel":
        status, current = "cancelled", None
    elif k == "interrupted":  # its process died (pushed by the owner, not a record)
        status = "interrupted"
    elif k == "lgput":  # a LangGraph checkpoint: one more step of the thread
        status, current = str(d.get("status") or status), "checkpoint"
        done += 1
        total = max(total, done)
    elif k == "lgwrite" and d.get("status"):
        status = str(d["status"])
    else:
        return run
    return run._replace(
        status=status,
        current_step=current,
        error=error,
        dead_letter=dead,
        steps_done=done,
        steps_total=total,
        epoch=epoch,
        attempt=attempt,
        seconds=seconds,
        updated=max(run.updated, e.ts),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
