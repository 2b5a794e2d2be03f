"""Every write the TUI makes, each through the journal client (or the splice library).

Each function does one thing, returns the sentence the UI shows, and lets ``LetItLoopError``
through: the screens show its message and fix. Nothing here imports Textual, so the same actions
could serve another front end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from letitloop.journal._config import who as who  # who decides, as journaled: user@host

if TYPE_CHECKING:
    from letitloop.journal import Journal
    from letitloop.journal.duckdb._client import OwnerJournal


# -- approvals ----------------------------------------------------------------------------------


def decide_approval(
    journal: OwnerJournal,
    approval_id: str,
    approved: bool,
    by: str,
    comment: str | None = None,
    payload: Any = None,
) -> str:
    """Approve or reject; the first decision wins (a later one raises ApprovalDecidedError)."""
    info = journal.decide_approval(
        approval_id, approved=approved, by=by, comment=comment or None, payload=payload
    )
    verb = "approved" if approved else "rejected"
    edited = " with an edited payload" if payload is not None else ""
    return f"{verb} {info.name} of {info.run_id}{edited}"


# -- effects in doubt ---------------------------------------------------------------------------


def resolve_effect(
    journal: OwnerJournal,
    run_id: str,
    position: int,
    resolution: str,
    by: str,
    comment: str | None = None,
) -> str:
    """Say whether an in-doubt side effect happened (``done``) or must run again (``redo``)."""
    if resolution not in ("done", "redo"):
        raise ValueError(f"resolution must be 'done' or 'redo', not {resolution!r}")
    journal.resolve_marker(run_id, position, resolution, by, comment)
    what = "will not run again" if resolution == "done" else "runs again on resume"
    return f"marked {resolution}: the effect at position {position} of {run_id} {what}"


# -- runs ---------------------------------------------------------------------------------------


RUN_ACTIONS = ("resume", "retry", "budget", "cancel", "reset")


def run_actions(journal: Journal, run_id: str) -> tuple[str, ...]:
    """The actions that apply to run ``run_id`` as it stands, by the one rule every surface
    offers its buttons and keys by (``operate.actions_for``; the lab gets it from the server as
    a run's ``actions``)."""
    from letitloop.operate import actions_for, summary_of

    return tuple(actions_for(summary_of(journal, journal.get_run(run_id))))


def why_not(action: str, run_id: str, status: str) -> str:
    """The sentence a surface shows when ``action`` does not apply to a run in ``status``."""
    if action == "retry":
        return f"{run_id} has no dead-lettered step to retry"
    nothing = {"resume": "resume", "budget": "budget", "cancel": "cancel", "reset": "reset"}
    return f"{run_id} is {status}: nothing to {nothing.get(action, action)}"


def retry_dead_letter(journal: OwnerJournal, run_id: str, by: str) -> str:
    journal.rearm_step(run_id, by)
    return f"re-armed the dead-lettered step of {run_id}: resume the run to try it again"


def raise_budget(journal: OwnerJournal, run_id: str, by: str, dollars: float) -> str:
    if dollars <= 0:
        raise ValueError("a budget must be more than $0")
    journal.set_budget(run_id, by, usd_micros=round(dollars * 1_000_000))
    return f"budget of {run_id} set to ${dollars:g}: resume the run to continue"


def fork_run_at(journal: OwnerJournal, run_id: str, position: int, by: str) -> tuple[str, str]:
    """Fork a run at a step: a new run reusing the steps before it (nothing runs yet).
    Returns the sentence to show and the fork's run id."""
    from letitloop.kernel._fork import fork_run

    fork = fork_run(run_id, position, journal=journal, by=by)
    said = (
        f"forked {run_id} at position {position}: {fork.run_id} reuses {fork.reused} step(s) "
        "and runs from there; press R to run it"
    )
    return said, fork.run_id


def cancel_run(journal: OwnerJournal, run_id: str, by: str, comment: str | None = None) -> str:
    """Cancel a run; the comment is journaled as the cancel's reason."""
    journal.cancel_run(run_id, by, comment or "cancelled from lil-tui")
    return f"cancelled {run_id}: it stops at its next step; reset it to start over"


def reset_run(journal: OwnerJournal, run_id: str, by: str, comment: str | None = None) -> str:
    journal.reset_run(run_id, by, comment)
    return f"reset {run_id}: the next call runs every step again"


@dataclass
class Resume:
    """A resume running in the background: the process and where its output goes."""

    run_id: str
    process: subprocess.Popen[bytes]
    log: Path

    def wait(self) -> int:
        return self.process.wait()

    def tail(self, lines: int = 6) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])


def resume_command(journal_location: str, run_id: str) -> list[str]:
    """``lil runs resume`` in a fresh interpreter: a resume imports the user's workflow code, which
    must never run inside the dashboard."""
    return [
        sys.executable,
        "-m",
        "letitloop",
        "--journal",
        journal_location,
        "runs",
        "resume",
        run_id,
    ]


def start_resume(journal_location: str, run_id: str, cwd: str | None = None) -> Resume:
    """Spawn the resume detached from the terminal; its output goes to a log file."""
    fd, name = tempfile.mkstemp(prefix="lil-tui-resume-", suffix=".log")
    with os.fdopen(fd, "wb") as log:
        process = subprocess.Popen(
            resume_command(journal_location, run_id),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    return Resume(run_id, process, Path(name))


# -- splices ------------------------------------------------------------------------------------


def apply_splice(
    journal: OwnerJournal, proposal_id: str, by: str, comment: str | None = None
) -> str:
    """Apply a proposal if its target is unchanged (the comment is journaled with the
    decision); a conflict is journaled and raised."""
    from letitloop.splice._proposals import apply_proposal, get_proposal

    apply_proposal(proposal_id, by=by, comment=comment or None, journal=journal)
    p = get_proposal(proposal_id, journal=journal)
    return f"applied {p.id}: replaced {p.target} in {p.path}"


def reject_splice(journal: OwnerJournal, proposal_id: str, by: str, comment: str | None) -> str:
    from letitloop.splice._proposals import reject_proposal

    p = reject_proposal(proposal_id, by=by, comment=comment or None, journal=journal)
    return f"rejected {p.id} ({p.target})"
