"""Recoverable runs: a run executing in its caller's process that a worker takes over if the
process dies (``@durable(recover=...)``, ``workflow.start``).

A plain call is the caller's: if its process dies, the run waits for its caller (or a person,
``lil runs resume``). A recoverable one, once its lease is taken, is *held* on a queue by the
process's journal session (``QueueJournal.hold``), with its entry point and arguments signed by
the journal's key exactly as an enqueued run's. When the process ends the run, the item is
finished with its outcome; when the process dies first (DuckDB: its connections close;
PostgreSQL: its run lease is no longer alive), the item goes back to the queue and a ``lil
worker`` takes the run over by that signed entry point: completed steps replay, the step in
flight runs again, a side effect in doubt stops the run as always.

``recover=True`` sends such runs to the queue ``default``; ``recover="name"`` to that queue;
``recover=Queue(...)`` to that queue with its limits (declared, as an enqueue declares them).
"""

from __future__ import annotations

import time
from typing import Any

from letitloop.errors import (
    ConfigError,
    InDoubtError,
    LeaseLostError,
    LetItLoopError,
    RunCancelledError,
    RunLockedError,
    Suspended,
)
from letitloop.journal import Journal, QueueItem, QueueSpec, check_spec

DEFAULT_QUEUE = "default"


def recover_spec(value: object) -> tuple[QueueSpec, bool] | None:
    """The queue a recoverable workflow's orphaned runs go to, and whether its limits are
    declared (a ``Queue`` object's are; a name only creates a missing queue); None: not
    recoverable. A bad value is a ConfigError that says what to pass."""
    if value is None or value is False:
        return None
    if value is True:
        return QueueSpec(DEFAULT_QUEUE), False
    if isinstance(value, str):
        return check_spec(QueueSpec(value)), False
    spec = getattr(value, "spec", None)
    if isinstance(spec, QueueSpec):
        return spec, True
    raise ConfigError(
        f"recover={value!r} must be True, a queue's name or a Queue",
        fix='pass recover=True (the queue "default"), recover="embeddings", or '
        'recover=Queue("embeddings", concurrency=8)',
    )


def hold(journal: Journal, recover: tuple[QueueSpec, bool], run: dict[str, Any]) -> bool:
    """Hold the run this process just leased on its recovery queue; False when it cannot be
    recovered by a worker (no entry point to import, arguments the journal cannot encode)."""
    if run["entry"] is None or run["args"] is None:
        return False
    spec, declare = recover
    item = QueueItem(
        run_id=run["run_id"],
        queue=spec.name,
        workflow=run["workflow"],
        key=run["key"],
        priority=0,
        state="held",
        enqueued=time.time(),
        entry=run["entry"],
        args=run["args"],
    )
    journal.hold(spec, item, declare=declare)
    return True


def outcome(exc: BaseException | None) -> str | None:
    """What became of a held run, as its queue item says it; None when this process lost it
    (another holds the run now: the item is not this process's to finish)."""
    if exc is None:
        return "completed"
    if isinstance(exc, (LeaseLostError, RunLockedError)):
        return None
    if not isinstance(exc, (Exception, KeyboardInterrupt)):
        return None  # SystemExit and the like: the process ends mid-run (interrupted, not failed)
    if isinstance(exc, Suspended):
        return "suspended"
    if isinstance(exc, RunCancelledError):
        return "cancelled"
    if isinstance(exc, InDoubtError):
        return "stopped"
    return "failed"


def unhold(journal: Journal, run_id: str, exc: BaseException | None) -> None:
    """Finish the held item with the run's outcome; a journal that is away leaves it held, and
    the worker that takes it then finds the run's outcome journaled (nothing runs twice)."""
    done = outcome(exc)
    if done is None:
        return
    try:
        journal.unhold(run_id, done)
    except LetItLoopError:
        pass
