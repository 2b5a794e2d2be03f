"""Every action a person takes on the journal, written once, each returning its true outcome.

Approve or reject, resolve a side effect in doubt, resume, cancel, reset, retry a dead letter,
raise a budget, fork, apply or reject a splice: the CLI, lil-tui, the lab, the notebook widgets
(and ``lil mcp``, for the actions it may take) call these. Each returns an ``Outcome`` whose
``message`` is the sentence every surface shows; an action that does not apply raises the
``LetItLoopError`` that says why and what to do instead, the same on every surface. ``by``
names who acted, as journaled with the decision.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from letitloop.errors import ConfigError, JournalError, LetItLoopError
from letitloop.operate._format import money

if TYPE_CHECKING:
    from letitloop.journal import Journal, RunDetail

RESOLUTIONS = ("done", "redo")


class Outcome(NamedTuple):
    """What an action did: the sentence to show, the run it concerned, and its facts."""

    action: str
    message: str
    run_id: str | None = None
    data: dict[str, Any] = {}  # noqa: RUF012 (a NamedTuple default is never mutated here)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "message": self.message, "run_id": self.run_id} | self.data


# -- approvals ----------------------------------------------------------------------------------


def decide_approval(
    journal: Journal,
    approval_id: str,
    *,
    approved: bool,
    by: str,
    comment: str | None = None,
    payload: Any = None,
) -> Outcome:
    """Approve or reject (``approval_id`` may be a unique prefix); the first decision wins and a
    later one raises ``ApprovalDecidedError``. ``payload`` replaces the request's, checked
    against its schema."""
    info = journal.decide_approval(
        approval_id, approved=approved, by=by, comment=comment or None, payload=payload
    )
    verb = "approved" if approved else "rejected"
    edited = " with an edited payload" if payload is not None else ""
    message = f"{verb} {info.name} of {info.run_id}{edited}"
    return Outcome(verb, message, info.run_id, {"approval_id": info.id, "status": info.status})


# -- side effects in doubt ----------------------------------------------------------------------


def resolve_effect(
    journal: Journal,
    run_id: str,
    marker: str | int,
    resolution: str,
    *,
    by: str,
    comment: str | None = None,
) -> Outcome:
    """Say whether an in-doubt side effect happened (``done``: the run skips the block) or must
    run again (``redo``). ``marker`` is its name or position."""
    if resolution not in RESOLUTIONS:
        raise ConfigError(
            f"a side effect is resolved as 'done' or 'redo', not {resolution!r}",
            fix="done: it happened, the block is skipped; redo: it did not, the block runs again",
        )
    journal.resolve_marker(run_id, marker, resolution, by, comment or None)
    resolved = [
        a
        for a in journal.get_run(run_id).attempts
        if a.kind == "marker" and marker in (a.name, a.position) and a.resolution == resolution
    ]
    if not resolved:
        raise JournalError(
            f"the journal does not show marker {marker!r} of run {run_id} as resolved",
            fix=f"see its markers with `lil effects list {run_id}`",
            run_id=run_id,
        )
    a = resolved[-1]
    what = "skips the block" if resolution == "done" else "runs the block again"
    message = (
        f"resolved {a.name!r} (position {a.position}) of {run_id} as {resolution} by "
        f"{a.resolved_by}: the next call of the workflow {what} and continues"
    )
    facts = {"marker": a.name, "position": a.position, "attempt": a.attempt}
    return Outcome(resolution, message, run_id, facts | {"resolution": resolution, "by": by})


# -- runs ---------------------------------------------------------------------------------------


def _run(journal: Journal, run: str) -> RunDetail:
    return journal.get_run(journal.find_run(run))


def retry_dead_letter(
    journal: Journal, run: str, *, by: str, step: str | int | None = None
) -> Outcome:
    """Give a dead-lettered step new attempts; the run tries it again when resumed."""
    run_id = journal.find_run(run)
    journal.rearm_step(run_id, by, step)
    message = f"re-armed the dead-lettered step of {run_id}: resume the run to try it again"
    return Outcome("retry", message, run_id)


def raise_budget(
    journal: Journal,
    run: str,
    *,
    by: str,
    usd: float | None = None,
    tokens: int | None = None,
    names: tuple[str, str] = ("usd", "tokens"),
) -> Outcome:
    """Set or raise a run's budget; a run suspended by its budget continues when resumed.
    ``names`` are what the surface calls the two amounts (``--usd``, a form's field), so a
    refusal names what the person typed."""
    from letitloop.kernel import budget_tokens, usd_micros

    if usd is None and tokens is None:
        raise ConfigError(
            f"a budget needs {names[0]}, {names[1]} or both", fix=f"e.g. {names[0]} 2.5"
        )
    micros = None if usd is None else usd_micros(usd, names[0])
    most = None if tokens is None else budget_tokens(tokens, names[1])
    run_id = journal.find_run(run)
    journal.set_budget(run_id, by, usd_micros=micros, tokens=most)
    shown = money(micros) if micros is not None else ""
    limits = [shown, f"{tokens:,} tokens" if tokens else ""]
    said = ", ".join(x for x in limits if x)
    message = f"budget of {run_id} set to {said}: resume the run to continue"
    return Outcome("budget", message, run_id, {"usd_micros": micros, "tokens": most})


def cancel_run(journal: Journal, run: str, *, by: str, reason: str | None = None) -> Outcome:
    """Stop a run for good: its process stops at its next journal write, and calling it again
    raises ``RunCancelledError`` until someone resets it (a completed run is refused)."""
    run_id = journal.find_run(run)
    journal.cancel_run(run_id, by, reason or None)
    message = f"cancelled {run_id}: it stops at its next step; reset it to start over"
    return Outcome("cancel", message, run_id, {"reason": reason})


def reset_run(journal: Journal, run: str, *, by: str, comment: str | None = None) -> Outcome:
    """Start a run over: the next call executes every step again (a new epoch; the old attempts
    stay in the history)."""
    before = _run(journal, run).run
    journal.reset_run(before.run_id, by, comment or None)
    after = journal.get_run(before.run_id).run
    message = (
        f"reset {before.run_id} (was {before.status} with {before.steps_done} steps done, "
        f"epoch {before.epoch}): the next call of {after.workflow} runs every step again"
    )
    facts = {"before": before.status, "epoch": after.epoch, "steps_done": before.steps_done}
    return Outcome("reset", message, before.run_id, facts)


def fork(
    journal: Journal,
    run: str,
    from_step: int | str,
    *,
    by: str,
    key: str | None = None,
    args: Any = None,
    kwargs: Any = None,
) -> Outcome:
    """A new run that reuses every journaled step of ``run`` before ``from_step`` (a position or
    a step name) and runs from there when it is resumed; the source is never written to."""
    from letitloop.kernel import fork_run

    forked = fork_run(run, from_step, journal=journal, by=by, key=key, args=args, kwargs=kwargs)
    source, position = forked.origin.run_id, forked.origin.position
    message = (
        f"forked {source} at position {position}: {forked.run_id} reuses {forked.reused} "
        "step(s) and runs from there when resumed"
    )
    facts = {"fork": forked.run_id, "position": position, "reused": forked.reused}
    return Outcome("fork", message, source, facts | {"resumable": forked.resumable})


# -- resume: in a fresh process, never inside the surface ---------------------------------------


@dataclass
class Resume:
    """A resume running in the background: its process and where its output goes."""

    run_id: str
    process: subprocess.Popen[bytes]
    log: Path
    outcome: Outcome = field(init=False)

    def __post_init__(self) -> None:
        message = f"resuming {self.run_id} in a new process (pid {self.process.pid})"
        self.outcome = Outcome("resume", message, self.run_id, {"pid": self.process.pid})

    def wait(self) -> int:
        return self.process.wait()

    def tail(self, lines: int = 6) -> str:
        return log_tail(self.log, lines)


def log_tail(log: Path, lines: int = 6) -> str:
    """The last ``lines`` of a started process's log ("" when it cannot be read), to say why
    it stopped."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def check_resumable(journal: Journal, run: str) -> str:
    """The run's id if it can be resumed now, else the error that says why (the same rule the
    in-process ``lil runs resume`` applies, plus: a completed run has nothing to resume)."""
    from letitloop.kernel import resume_refusal

    detail = _run(journal, run)
    run_id = detail.run.run_id
    if detail.run.status == "completed":
        raise ConfigError(
            f"run {run_id} already completed: there is nothing to resume",
            fix=f"see its result with `lil runs show {run_id}`; to run it again, fork it "
            f"(`lil runs fork {run_id} --from 0`) or reset it",
            run_id=run_id,
        )
    refusal: LetItLoopError | None = resume_refusal(detail)
    if refusal is not None:
        raise refusal
    return run_id


def resume_command(location: str, run_id: str) -> list[str]:
    """``lil runs resume`` in a fresh interpreter: a resume imports the user's workflow code,
    which must never run inside a dashboard, an editor or a server."""
    return [sys.executable, "-m", "letitloop", "--journal", location, "runs", "resume", run_id]


def note_started(journal: Journal, run_id: str, by: str, what: str) -> None:
    """Journal who started a process for ``run_id`` (a ``restart`` record: every surface that
    shows a run's history says "restarted by BY"), so an action a person or an agent took
    through a surface is on the record with their name."""
    journal.note_restart(run_id, by, f"{what} started")


def start_resume(
    journal: Journal,
    run: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    by: str | None = None,
) -> Resume:
    """Check that the run can be resumed, then resume it in a detached process whose output goes
    to a log file (refused with the cause, before any process starts, when it cannot). With
    ``by``, who asked is journaled with the run first (``note_started``)."""
    run_id = check_resumable(journal, run)
    if by is not None:
        note_started(journal, run_id, by, "resume")
    fd, name = tempfile.mkstemp(prefix="lil-resume-", suffix=".log")
    with os.fdopen(fd, "wb") as log:
        process = subprocess.Popen(
            resume_command(journal.location, run_id),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=None if cwd is None else os.fspath(cwd),
            start_new_session=True,
        )
    return Resume(run_id, process, Path(name))


# -- splice proposals ---------------------------------------------------------------------------


def apply_splice(
    journal: Journal,
    proposal_id: str,
    *,
    by: str,
    comment: str | None = None,
    diff_path: str | None = None,
) -> Outcome:
    """Apply a proposal if its target is unchanged since it was proposed; a conflict is
    journaled and raised. The outcome carries the diff written (naming the file ``diff_path``,
    by default the proposal's path) and the definitions it changed."""
    from letitloop.splice._proposals import apply_proposal, get_proposal

    result = apply_proposal(proposal_id, by=by, comment=comment or None, journal=journal)
    p = get_proposal(proposal_id, journal=journal)
    message = f"applied {p.id}: replaced {p.target} in {p.path}"
    facts = {"proposal_id": p.id, "state": p.state, "changed": list(result.changed)}
    return Outcome(
        "apply", message, p.origin, facts | {"diff": result.diff_for(diff_path or p.path)}
    )


def reject_splice(
    journal: Journal, proposal_id: str, *, by: str, comment: str | None = None
) -> Outcome:
    from letitloop.splice._proposals import reject_proposal

    p = reject_proposal(proposal_id, by=by, comment=comment or None, journal=journal)
    message = f"rejected {p.id} ({p.target})"
    return Outcome("reject", message, p.origin, {"proposal_id": p.id, "state": p.state})
