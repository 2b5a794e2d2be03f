"""Who did what to a run, and a step's whole output: the parts of a run a surface reads on
demand, beyond its view.

``decisions`` lists the journaled interventions on a run (a fork that created it, resets,
cancels, processes started for someone, budgets, markers resolved, approvals answered), each
with who took it, as recorded: an action taken through any surface (the CLI, lil-tui, the lab,
``lil mcp``) reads back with its name. ``step_output`` is one attempt's output as text, never
decoded as code (JSON pretty-printed, a pickle by the short repr taken when it was written).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from letitloop.errors import ConfigError, JournalError

if TYPE_CHECKING:
    from letitloop.journal import EventInfo, Journal

DECISION_KINDS = frozenset({"run", "reset", "cancel", "restart", "budget", "resolve", "answer"})
EVENT_PAGE = 5000  # events read per call while looking for decisions
MAX_EVENTS = 200_000  # a run's events read at most (a longer history is read up to here)
MAX_OUTPUT = 1 << 20  # characters of a step's output kept as text


class Decision(NamedTuple):
    """One intervention on a run: when, what (a sentence), who, and at which step if any."""

    ts: float
    kind: str
    by: str
    text: str
    position: int | None


def decisions(journal: Journal, run_id: str, limit: int = 50) -> list[Decision]:
    """The last ``limit`` interventions on ``run_id``, oldest first."""
    found: list[Decision] = []
    after, read = 0, 0
    while read < MAX_EVENTS:
        page = journal.events(after=after, run_id=run_id, limit=EVENT_PAGE)
        for e in page:
            d = _decision(e)
            if d is not None:
                found.append(d)
        read += len(page)
        if len(page) < EVENT_PAGE:
            break
        after = page[-1].seq
    return found[-limit:] if limit > 0 else []


def _decision(e: EventInfo) -> Decision | None:
    d: dict[str, Any] = e.data or {}
    by = d.get("by")
    if e.kind not in DECISION_KINDS or not isinstance(by, str):
        return None
    text = _sentence(e.kind, d, by)
    return None if text is None else Decision(e.ts, e.kind, by, text, e.position)


def _sentence(kind: str, d: dict[str, Any], by: str) -> str | None:
    note = d.get("reason") or d.get("note") or d.get("comment")
    tail = f": {str(note)[:300]}" if note else ""
    if kind == "run":
        fork = d.get("fork")
        if not isinstance(fork, dict):
            return None  # a process starting the run: its holder, not a decision
        return f"forked from {fork.get('run')} at position {fork.get('pos')} by {by}"
    if kind == "reset":
        return f"reset by {by}{tail}"
    if kind == "cancel":
        return f"cancelled by {by}{tail}"
    if kind == "restart":
        return f"restarted by {by}{tail}"
    if kind == "budget":
        limits = [
            f"${d['usd_micros'] / 1e6:g}" if d.get("usd_micros") else "",
            f"{d['tokens']} tokens" if d.get("tokens") else "",
        ]
        return f"budget set to {', '.join(x for x in limits if x) or 'none'} by {by}"
    if kind == "resolve":
        res = d.get("res")
        if res == "rearm":
            return f"dead-lettered step at position {d.get('pos')} re-armed by {by}"
        return f"side effect at position {d.get('pos')} resolved as {res} by {by}"
    verb = "approved" if d.get("ok") else "rejected"
    timed = " (on timeout)" if d.get("timeout") else ""
    return f"approval {d.get('id')} {verb} by {by}{timed}{tail}"


def decision_json(d: Decision) -> dict[str, Any]:
    """An intervention as every JSON surface writes it."""
    return {"ts": d.ts, "kind": d.kind, "by": d.by, "text": d.text, "position": d.position}


# -- a step's output ------------------------------------------------------------------------------


class StepOutput(NamedTuple):
    """One attempt's output as text (``text`` None when the attempt journaled no output)."""

    run_id: str
    epoch: int
    position: int
    attempt: int
    name: str
    status: str
    codec: str | None
    size: int
    text: str | None


def step_output(
    journal: Journal,
    run: str,
    position: int,
    attempt: int | None = None,
    limit: int = MAX_OUTPUT,
) -> StepOutput:
    """The output of the step at ``position`` of the run ``run`` names (its latest attempt, or
    ``attempt``), as text of at most ``limit`` characters; never unpickled or imported."""
    from letitloop.journal import preview

    detail = journal.get_run(journal.find_run(run))
    run_id = detail.run.run_id
    tries = sorted((a for a in detail.attempts if a.position == position), key=lambda a: a.attempt)
    if not tries:
        known = sorted({a.position for a in detail.attempts})
        raise ConfigError(
            f"run {run_id} has no step at position {position} in its current epoch",
            fix=f"its positions: {', '.join(map(str, known)) or 'none yet'} (`lil runs show "
            f"{run_id}`)",
            run_id=run_id,
        )
    wanted = tries[-1].attempt if attempt is None else attempt
    chosen = next((a for a in tries if a.attempt == wanted), None)
    if chosen is None:
        raise ConfigError(
            f"step {tries[-1].name!r} (position {position}) of run {run_id} has no attempt "
            f"{attempt}",
            fix=f"its attempts: {', '.join(str(a.attempt) for a in tries)}",
            run_id=run_id,
            position=position,
        )
    text = None
    if chosen.codec is not None and chosen.status in ("completed", "failed"):
        try:
            codec, data = journal.get_output(run_id, detail.run.epoch, position, chosen.attempt)
        except JournalError:
            codec, data = None, None
        if codec == "pickle":
            text = chosen.preview or f"<pickled object, {len(data or b'')} bytes>"
        elif codec is not None:
            text = preview(codec, data, limit=limit)
    return StepOutput(
        run_id=run_id,
        epoch=detail.run.epoch,
        position=position,
        attempt=chosen.attempt,
        name=chosen.name,
        status=chosen.status,
        codec=chosen.codec,
        size=chosen.size,
        text=text,
    )
