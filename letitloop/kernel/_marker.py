"""``atomic_marker``: a fence around a side effect that is never silently repeated.

The marker's intent is journaled durably before its block runs and its completion after. On
replay a completed marker yields False (skip the block). A marker that started but never
completed (the process died inside, or the block raised) is *in doubt*: the side effect may or
may not have happened. Then ``reconcile(marker)`` decides ("done" skips, "redo" runs the block
again), or ``InDoubtError`` stops the run until a person resolves it (``lil effects resolve``).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from letitloop.errors import ConfigError
from letitloop.journal import StepRecord, in_doubt_error
from letitloop.kernel._context import RunContext, current_step_var, require_run

_NULL = ("json", b"null")


class InDoubtMarker(NamedTuple):
    """What ``reconcile`` is given: which marker is in doubt and why."""

    run_id: str
    name: str
    position: int
    attempt: int
    idempotency_key: str
    error: dict[str, Any] | None


Reconcile = Callable[[InDoubtMarker], str]


def _resolve(ctx: RunContext, rec: StepRecord, res: str, by: str) -> None:
    ctx.journal.append(
        [
            {
                "k": "resolve",
                "run": ctx.run_id,
                "epoch": ctx.epoch,
                "pos": rec.position,
                "att": rec.attempt,
                "res": res,
                "by": by,
                "ts": time.time(),
            }
        ]
    )


def _decide(ctx: RunContext, rec: StepRecord, reconcile: Reconcile | None) -> str:
    """done/redo for an in-doubt marker, from an earlier resolution or the reconcile callback."""
    if rec.resolution is not None:
        return rec.resolution
    if reconcile is None:
        raise in_doubt_error(ctx.run_id, rec)
    info = ctx.step_info(rec.position, rec.attempt, "marker", rec.name)
    decision = reconcile(
        InDoubtMarker(
            ctx.run_id, rec.name, rec.position, rec.attempt, info.idempotency_key, rec.error
        )
    )
    if decision not in ("done", "redo"):
        raise ConfigError(
            f"reconcile for marker {rec.name!r} returned {decision!r}",
            fix='return "done" if the side effect happened, "redo" to run the block again',
            run_id=ctx.run_id,
            step=rec.name,
            position=rec.position,
        )
    _resolve(ctx, rec, decision, f"reconcile@{os.getpid()}@{socket.gethostname()}")
    return decision


def _span_end(ctx: RunContext, rec: StepRecord) -> int:
    """Where numbering continues after skipping the block of a marker resolved as done."""
    if rec.next_position is not None:
        return rec.next_position
    # the process died inside the block: everything recorded after the marker was inside it
    return max(ctx.last_recorded + 1, rec.position + 1)


@contextmanager
def atomic_marker(name: str, reconcile: Reconcile | None = None) -> Iterator[bool]:
    """Fence a side effect: ``with atomic_marker("notify") as go:``, then ``if go: ...``."""
    ctx = require_run("atomic_marker()")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"marker name must be a non-empty string, got {name!r}")
    pos = ctx.take_position()
    rec = ctx.replayed(pos, "marker", name, "")
    att = ctx.first_attempt(pos)
    if rec is not None:
        if rec.status == "completed":
            ctx.skip_to(rec.next_position if rec.next_position is not None else pos + 1)
            yield False
            return
        if _decide(ctx, rec, reconcile) == "done":
            end = _span_end(ctx, rec)
            if rec.next_position is None:
                # pin where numbering goes on: steps recorded after this call are not in the
                # block, and a later replay must number them the same way
                ident = (pos, rec.attempt, "marker", name, "")
                ctx.journal.append(
                    [ctx.record("ok", *ident, codec=_NULL[0], out=_NULL[1], next=end)]
                )
            ctx.skip_to(end)
            yield False
            return
        att = rec.attempt + 1
    ident = (pos, att, "marker", name, "")
    ctx.journal.append([ctx.record("step", *ident)])  # the intent is durable before the block
    token = current_step_var.set((ctx, pos, att, "marker", name, None))
    try:
        yield True
    except BaseException as exc:
        ctx.journal.append([ctx.error_record(exc, ident)])
        raise
    finally:
        current_step_var.reset(token)
    ctx.journal.append(
        [ctx.record("ok", *ident, codec=_NULL[0], out=_NULL[1], next=ctx.next_position)]
    )
