"""What a run is to a person: its summary, its steps, and the actions that apply to it.

Every surface lists and shows runs through these: the status, steps done out of known, how long
the run really executed (its tries, never the time since a killed attempt), what it cost, who
holds it, what it was forked from, how many approvals it waits for, and which actions a person
may take now. The JSON shapes here are the only ones any surface writes for a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from letitloop.journal import AttemptInfo, ForkOrigin, Journal, RunDetail, RunInfo

HUGE = 1 << 30
STATUSES = ("running", "interrupted", "suspended", "completed", "failed", "cancelled", "reset")
# what a person may do to a run, as every surface names it
ACTIONS = ("resume", "retry", "budget", "cancel", "reset", "fork")
# the error fields a surface shows (a journaled error may carry more, e.g. a long traceback)
ERROR_FIELDS = ("type", "title", "message", "fix", "traceback", "dead", "step", "position")


class RunSummary(NamedTuple):
    """One run as every surface lists it."""

    run_id: str
    workflow: str
    key: str
    status: str
    epoch: int
    attempt: int
    created: float
    updated: float
    steps_done: int
    steps_total: int  # positions known to have started (exact when read from the run's steps)
    current_step: str | None
    holder: str | None
    parent: str | None
    error: dict[str, Any] | None
    seconds: float | None  # how long its tries executed; None when the journal cannot tell
    cost_micros: int
    tokens: int
    saved_micros: int
    budget: tuple[int | None, int | None] | None
    waiting: int  # approvals it waits for
    dead_letter: bool
    forked_from: ForkOrigin | None
    actions: tuple[str, ...]  # what a person may do to it now (``actions_for``)


class StepSummary(NamedTuple):
    """One position of a run: its latest attempt and what all its attempts took."""

    position: int
    name: str
    kind: str
    status: str  # the latest attempt's; a resolved marker's says how (``failed (done)``)
    attempts: int
    seconds: float | None  # the sum of the attempts that ended; None if none did
    cost_micros: int
    latest: AttemptInfo


def summarize(
    info: RunInfo,
    *,
    detail: RunDetail | None = None,
    waiting: int = 0,
    forked_from: ForkOrigin | None = None,
) -> RunSummary:
    """A run's summary from its listing row, made exact by its steps when ``detail`` is given."""
    if detail is not None:
        total = len({a.position for a in detail.attempts})
        dead = any(_dead(a) for a in latest_attempts(detail.attempts).values())
    else:
        total = info.steps_total if info.steps_total is not None else info.steps_done
        dead = _dead_error(info.error) and info.status == "failed"
    seconds = info.active_seconds
    if seconds is None and detail is not None:
        seconds = sum(attempt_seconds(a) or 0.0 for a in detail.attempts)
    summary = RunSummary(
        run_id=info.run_id,
        workflow=info.workflow,
        key=info.key,
        status=info.status,
        epoch=info.epoch,
        attempt=info.attempt,
        created=info.created,
        updated=info.updated,
        steps_done=info.steps_done,
        steps_total=max(total, info.steps_done),
        current_step=info.current_step,
        holder=info.holder,
        parent=info.parent,
        error=info.error,
        seconds=seconds,
        cost_micros=info.cost_micros,
        tokens=info.tokens,
        saved_micros=info.saved_micros,
        budget=info.budget,
        waiting=waiting,
        dead_letter=dead,
        forked_from=forked_from,
        actions=(),
    )
    return summary._replace(actions=actions_for(summary))


def actions_for(run: RunSummary) -> tuple[str, ...]:
    """The actions a person may take on ``run`` now, in ``ACTIONS`` order: every surface offers
    these and only these (a completed run can be forked, not resumed, cancelled or reset; a
    running one only cancelled; a cancelled one only reset or forked)."""
    thread = run.workflow.startswith("langgraph:")
    s = run.status
    offered = {
        "resume": s in ("interrupted", "failed", "suspended", "reset")
        and run.parent is None
        and not thread,
        "retry": run.dead_letter and s == "failed",
        "budget": s in ("running", "interrupted", "suspended", "failed"),
        "cancel": s in ("running", "interrupted", "suspended", "failed"),
        "reset": s in ("interrupted", "suspended", "failed", "cancelled"),
        "fork": run.steps_done > 0 and run.parent is None and not thread,
    }
    return tuple(a for a in ACTIONS if offered[a])


def why_not(action: str, run: RunSummary) -> str:
    """What every surface says when ``action`` is not among the run's ``actions`` now."""
    if action == "retry":
        return f"{run.run_id} has no dead-lettered step to retry"
    return f"{run.run_id} is {run.status}: nothing to {action}"


def latest_attempts(attempts: list[AttemptInfo]) -> dict[int, AttemptInfo]:
    """The latest attempt of each position."""
    latest: dict[int, AttemptInfo] = {}
    for a in attempts:
        if a.position not in latest or a.attempt > latest[a.position].attempt:
            latest[a.position] = a
    return latest


def attempt_seconds(a: AttemptInfo) -> float | None:
    """How long one attempt ran, if it ended: an attempt whose process was killed has no end and
    never counts as running until now."""
    if a.started is None or a.ended is None:
        return None
    return max(0.0, a.ended - a.started)


def steps_of(detail: RunDetail) -> list[StepSummary]:
    """Each position of a run, in order, with its attempts summed."""
    by_pos: dict[int, list[AttemptInfo]] = {}
    for a in detail.attempts:
        by_pos.setdefault(a.position, []).append(a)
    steps = []
    for pos in sorted(by_pos):
        tries = sorted(by_pos[pos], key=lambda a: a.attempt)
        last = tries[-1]
        status = last.status
        if last.kind == "marker" and last.resolution:
            status = f"{status} ({last.resolution})"
        ended = [s for s in (attempt_seconds(a) for a in tries) if s is not None]
        steps.append(
            StepSummary(
                position=pos,
                name=last.name,
                kind=last.kind,
                status=status,
                attempts=len(tries),
                seconds=sum(ended) if ended else None,
                cost_micros=sum(a.cost_micros for a in tries),
                latest=last,
            )
        )
    return steps


def list_summaries(
    journal: Journal,
    *,
    status: str | None = None,
    workflow: str | None = None,
    text: str = "",
    limit: int = 100,
) -> list[RunSummary]:
    """Runs newest first, filtered by status, workflow and a search text (in id or workflow),
    each with the approvals it waits for and, for a fork (its key holds ``~``: a fork's own
    namespace), what it was forked from."""
    from letitloop.journal import forked_from

    waiting: dict[str, int] = {}
    for a in journal.approvals(status="pending", limit=HUGE):
        waiting[a.run_id] = waiting.get(a.run_id, 0) + 1
    needle = text.strip().lower()
    found = []
    for info in journal.list_runs(
        status=status, workflow=workflow, limit=HUGE if needle else limit
    ):
        if needle and needle not in info.run_id.lower() and needle not in info.workflow.lower():
            continue
        origin = forked_from(journal, info.run_id) if "~" in info.key else None
        summary = summarize(info, waiting=waiting.get(info.run_id, 0), forked_from=origin)
        if summary.dead_letter:  # its row cannot tell a step re-armed since: its steps can
            summary = _still_dead(journal, summary)
        found.append(summary)
        if len(found) >= limit:
            break
    return found


def summary_of(journal: Journal, detail: RunDetail) -> RunSummary:
    """One run's exact summary: its steps counted, its approvals and fork origin read."""
    from letitloop.journal import forked_from

    run_id = detail.run.run_id
    pending = journal.approvals(status="pending", run_id=run_id, limit=HUGE)
    origin = forked_from(journal, run_id)
    return summarize(detail.run, detail=detail, waiting=len(pending), forked_from=origin)


def _still_dead(journal: Journal, summary: RunSummary) -> RunSummary:
    """``summary`` of a run whose error is a dead letter, with ``dead_letter`` (and the retry
    it offers) as its steps say: a re-armed step is not dead, though the run's error stays
    until it is resumed (read only for such runs, so a listing costs nothing more)."""
    attempts = journal.get_run(summary.run_id).attempts
    if any(_dead(a) for a in latest_attempts(attempts).values()):
        return summary
    alive = summary._replace(dead_letter=False)
    return alive._replace(actions=actions_for(alive))


def _dead(a: AttemptInfo) -> bool:
    return bool(a.error and a.error.get("dead")) and a.resolution != "rearm"


def _dead_error(error: dict[str, Any] | None) -> bool:
    return bool(error) and str((error or {}).get("type", "")).endswith("DeadLetteredError")


# -- JSON: the one shape of each record -------------------------------------------------------


def error_json(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """A journaled error with the fields a surface shows."""
    if not error:
        return None
    return {k: error[k] for k in ERROR_FIELDS if error.get(k) is not None}


def run_json(s: RunSummary) -> dict[str, Any]:
    """A run as every JSON surface writes it (CLI ``--json``, the lab's API, ``lil mcp``)."""
    return {
        "run_id": s.run_id,
        "workflow": s.workflow,
        "key": s.key,
        "status": s.status,
        "epoch": s.epoch,
        "attempt": s.attempt,
        "created": s.created,
        "updated": s.updated,
        "steps_done": s.steps_done,
        "steps_total": s.steps_total,
        "current_step": s.current_step,
        "holder": s.holder,
        "parent": s.parent,
        "error": error_json(s.error),
        "seconds": s.seconds,
        "cost_micros": s.cost_micros,
        "tokens": s.tokens,
        "saved_micros": s.saved_micros,
        "budget": None if s.budget is None else {"usd_micros": s.budget[0], "tokens": s.budget[1]},
        "waiting": s.waiting,
        "dead_letter": s.dead_letter,
        "forked_from": None if s.forked_from is None else s.forked_from._asdict(),
        "actions": list(s.actions),
        "shown": shown(s),
    }


def shown(s: RunSummary) -> dict[str, str]:
    """A run's numbers as every surface writes them (a page shows these strings as they are;
    relative times are not among them: they are written when shown, with ``ago``)."""
    from letitloop.operate._format import duration, money, tokens

    budget = ""
    if s.budget is not None:
        usd, most = s.budget
        budget = ", ".join(
            x for x in (money(usd) if usd else "", tokens(most) if most else "") if x
        )
    return {
        "steps": f"{s.steps_done}/{s.steps_total}",
        "duration": duration(s.seconds),
        "cost": money(s.cost_micros),
        "budget": budget or "-",
        "current": s.current_step or ("" if s.status == "completed" else "-"),
    }


def attempt_json(a: AttemptInfo, preview_limit: int = 4000) -> dict[str, Any]:
    """One attempt of one step (its output previewed, never decoded)."""
    from letitloop.operate._format import duration, money, truncate

    return {
        "position": a.position,
        "attempt": a.attempt,
        "kind": a.kind,
        "name": a.name,
        "fingerprint": a.fingerprint,
        "status": a.status,
        "started": a.started,
        "ended": a.ended,
        "seconds": attempt_seconds(a),
        "codec": a.codec,
        "size": a.size,
        "error": error_json(a.error),
        "next_position": a.next_position,
        "resolution": a.resolution,
        "resolved_by": a.resolved_by,
        "preview": None if a.preview is None else truncate(a.preview, preview_limit),
        "cost_micros": a.cost_micros,
        "tokens_in": a.tokens_in,
        "tokens_out": a.tokens_out,
        "model": a.model,
        "cache": a.cache,
        "shown": {"duration": duration(attempt_seconds(a)), "cost": money(a.cost_micros)},
    }


def step_json(s: StepSummary) -> dict[str, Any]:
    """One position of a run (its attempts are listed beside it by ``view_json``)."""
    from letitloop.operate._format import duration, money

    return {
        "position": s.position,
        "name": s.name,
        "kind": s.kind,
        "status": s.status,
        "tries": s.attempts,
        "seconds": s.seconds,
        "cost_micros": s.cost_micros,
        "shown": {"duration": duration(s.seconds), "cost": money(s.cost_micros)},
    }
