"""Fork a run, the journal side: a new run whose journal holds the source's steps before STEP.

``fork_records`` reads the source through the ``Journal`` contract only (``get_run``,
``open_run(lease=False)``, ``get_output``) and returns the records of the new run: its ``run``
record, carrying ``fork`` (where it came from), one ``ok``/``err`` record per step before STEP
(markers resolved as done keep their resolution), and a ``suspend`` record saying how to run it.
``import_records`` writes them on every backend as it writes ``lil journal copy``'s history:
checked by the state machine, with no lease, and the source run is never written to.

The copied steps replay whatever their inputs are now (``ANY_INPUT`` fingerprint): a fork takes
the results before STEP as given, so a fork with new arguments reuses them too. A different step
name or kind at a copied position is still a ``NonDeterminismError``.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from letitloop.errors import ConfigError, JournalError, RunLockedError
from letitloop.journal._contract import Encoded, Journal, RunState, StepRecord
from letitloop.journal._records import Record

ANY_INPUT = "*"  # the fingerprint of a copied step: it replays whatever its arguments are now


class ForkOrigin(NamedTuple):
    """What a forked run was forked from: the source run, its epoch, and the step it runs from."""

    run_id: str
    position: int
    epoch: int
    step: str | None  # the name of the step at ``position`` in the source, if it got there


class ForkPlan(NamedTuple):
    """The source's state and where the fork starts, checked and ready to copy."""

    source: RunState
    workflow: str
    entry: str | None  # the source's journaled (signed) entry point
    args: Encoded | None
    position: int
    step: str | None


def forked_from(journal: Journal, run_id: str) -> ForkOrigin | None:
    """Where ``run_id`` was forked from, or None for a run that is not a fork.

    The origin is kept in the run's first record (its ``run`` record's ``fork`` field), which
    every backend returns as that run's first event; it is checked again here, as any read."""
    events = journal.events(run_id=run_id, limit=1)
    return origin_of(events[0].data) if events else None


def origin_of(data: dict[str, Any]) -> ForkOrigin | None:
    """The fork origin a run's first event carries, if any (checked: events are read data)."""
    fork = data.get("fork") if data.get("k") == "run" else None
    if not isinstance(fork, dict):
        return None
    src, pos, epoch, step = (fork.get(k) for k in ("run", "pos", "epoch", "step"))
    if not (isinstance(src, str) and type(pos) is int and type(epoch) is int):
        return None
    return ForkOrigin(src, pos, epoch, step if isinstance(step, str) else None)


def plan_fork(journal: Journal, run_id: str, from_step: int | str) -> ForkPlan:
    """Check that ``run_id`` can be forked at ``from_step`` (a position, or a step's name: its
    first position) and read what the fork copies; raise a clear error if it cannot."""
    detail = journal.get_run(run_id)
    info = detail.run
    if info.holder is not None:
        raise RunLockedError(
            f"run {run_id} is being executed by {info.holder}: a run can be forked only while "
            "no process executes it (its steps may still change)",
            fix="wait for it to finish, suspend or fail (or stop that process), then fork again",
            run_id=run_id,
        )
    if info.workflow.startswith("langgraph:"):
        raise ConfigError(
            f"run {run_id} is a LangGraph thread: it forks from a checkpoint, by LangGraph",
            fix="use letitloop.fork_thread(graph, thread_id, checkpoint_id) (or invoke the graph "
            'with config={"configurable": {"thread_id": ..., "checkpoint_id": ...}})',
            run_id=run_id,
        )
    if info.parent is not None:
        raise ConfigError(
            f"run {run_id} is a child run of {info.parent}: it runs as one step of its parent",
            fix=f"fork the parent run {info.parent} from the step that calls it",
            run_id=run_id,
        )
    state = journal.open_run(run_id=run_id, workflow=info.workflow, key=info.key, lease=False)
    steps = {p: s for p, s in state.steps.items() if s.status != "superseded"}
    position, name = _position(run_id, steps, from_step)
    for pos in sorted(p for p in steps if p < position):
        later = any(pos < p < position for p in steps)
        _check_copyable(run_id, steps[pos], position, later)
    return ForkPlan(state, info.workflow, detail.entry, detail.args, position, name)


def _position(run_id: str, steps: dict[int, StepRecord], from_step: int | str) -> tuple[int, Any]:
    if isinstance(from_step, str) and from_step.strip().isdigit():
        from_step = int(from_step)
    end = max(steps, default=-1) + 1
    if isinstance(from_step, int) and not isinstance(from_step, bool):
        if not 0 <= from_step <= end:
            raise ConfigError(
                f"run {run_id} has no step at position {from_step}: its steps are at positions "
                f"0 to {end - 1}",
                fix=f"fork from a position between 0 and {end} (`lil runs show {run_id}`)",
                run_id=run_id,
            )
        rec = steps.get(from_step)
        return from_step, rec.name if rec else None
    found = sorted(p for p, s in steps.items() if s.name == from_step)
    if not found:
        names = ", ".join(dict.fromkeys(s.name for _, s in sorted(steps.items()))) or "none"
        raise ConfigError(
            f"run {run_id} has no step named {from_step!r} (its steps: {names})",
            fix="give a step's name or its position (`lil runs show` lists both)",
            run_id=run_id,
        )
    return found[0], from_step


def _check_copyable(run_id: str, rec: StepRecord, position: int, later: bool) -> None:
    """A step before the fork point must have an outcome the fork can replay: completed, failed
    with the run going on past it (the workflow caught it), or a marker resolved as done."""
    end = rec.next_position
    if end is not None and rec.position < position < end:
        raise ConfigError(
            f"position {position} of run {run_id} is inside the block of {rec.kind} "
            f"{rec.name!r} (positions {rec.position} to {end - 1})",
            fix=f"fork from position {rec.position} (the block) or {end} (after it)",
            run_id=run_id,
            position=position,
        )
    failed_on = rec.status == "failed" and later
    if rec.status == "completed" or failed_on or rec.resolution == "done":
        return
    what = {"marker": "is in doubt", "failed": "failed (the run stopped there)"}.get(
        rec.kind if rec.status != "failed" else "failed", "never finished"
    )
    raise ConfigError(
        f"{rec.kind} {rec.name!r} (position {rec.position}) of run {run_id} {what}: a fork after "
        "it would have no result to reuse",
        fix=f"fork from position {rec.position} or earlier (or resolve it first)",
        run_id=run_id,
        step=rec.name,
        position=rec.position,
    )


def fork_records(
    journal: Journal,
    plan: ForkPlan,
    *,
    run_id: str,
    key: str,
    args: Encoded | None,
    entry: str | None,
    by: str,
) -> list[Record]:
    """The new run's records (see the module docstring), ready for ``import_records``."""
    src = plan.source
    now = time.time()
    origin = {"run": src.run_id, "pos": plan.position, "epoch": src.epoch, "step": plan.step}
    records: list[Record] = [
        {
            "k": "run",
            "run": run_id,
            "wf": plan.workflow,
            "key": key,
            "epoch": 0,
            "try": 0,  # created, not yet started: its first call is try 1
            "args": list(args) if args else None,
            "entry": entry,
            "parent": None,
            "by": by,
            "ts": now,
            "fork": origin,
        }
    ]
    copied = [
        src.steps[p]
        for p in sorted(src.steps)
        if p < plan.position and src.steps[p].status != "superseded"
    ]
    for rec in copied:
        records += _copied(journal, src, rec, run_id, now)
    at = plan.position
    where = f"{plan.step!r} (position {at})" if plan.step else f"position {at}"
    reason = (
        f"forked from {src.run_id} at {where}: {len(copied)} journaled step(s) before it "
        f"are reused; run it with `lil runs resume {run_id}` or letitloop.run_fork"
    )
    records.append({"k": "suspend", "run": run_id, "epoch": 0, "reason": reason, "ts": now})
    return records


def _copied(
    journal: Journal, src: RunState, rec: StepRecord, run_id: str, now: float
) -> list[Record]:
    base = {"run": run_id, "epoch": 0, "pos": rec.position, "att": rec.attempt, "ts": now}
    what = {"kind": rec.kind, "name": rec.name, "fp": ANY_INPUT}
    if rec.status not in ("completed", "failed"):  # a marker resolved as done: keep that
        return [
            {"k": "step", **base, **what},
            {"k": "resolve", **base, "res": "done", "by": f"fork of {src.run_id}"},
        ]
    codec, out = rec.codec, rec.output
    if rec.big or (out is None and codec is not None):
        codec, out = journal.get_output(src.run_id, src.epoch, rec.position, rec.attempt)
    if rec.status == "failed":
        err = dict(rec.error or {"type": "Exception", "message": "failed"})
        return [{"k": "err", **base, **what, "err": err, "codec": codec, "out": out}]
    if codec is None or out is None:
        raise JournalError(
            f"step {rec.name!r} (position {rec.position}) of run {src.run_id} completed but its "
            "output cannot be read",
            fix="fork from that step instead",
            run_id=src.run_id,
            position=rec.position,
        )
    return [{"k": "ok", **base, **what, "codec": codec, "out": out, "next": rec.next_position}]
