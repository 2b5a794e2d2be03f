"""Every action, taken from each surface on runs of its own, and what it must have done.

A surface ``who`` acts on its own targets (``Targets``): approve and resume ``e-WHO``; reject,
cancel and reset ``e-no-WHO``; retry and budget the dead letter ``f-WHO``; fork ``flows.ok:a``
as ``a~WHO``; resolve the marker in doubt of ``c-WHO``; apply one proposal on ``apps/WHO.py`` and
reject the other. ``expect`` then reads the journal through operate and checks each action's
effect, journaled with the name the surface acted under; the test's last comparison shows that
every other surface reads the same. A resume of the cancelled run is refused on every surface
with operate's cause (``refusal``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.helpers import wait_until
from tests.matrix.build import Scenario

CANCELLED = "flows.halted:g"  # cancelled by a person in the scenario: never resumed
COMPLETED = "flows.ok:a"
ACTIONS = (
    "approve",
    "reject",
    "resume",
    "cancel",
    "reset",
    "retry",
    "budget",
    "fork",
    "resolve",
    "apply",
    "reject splice",
    "refused resume",
)
BUDGET_USD = 2.0


@dataclass(frozen=True)
class Targets:
    """The runs, proposals and file one surface acts on."""

    who: str

    @property
    def approve(self) -> str:
        return f"flows.asks:e-{self.who}"

    @property
    def reject(self) -> str:
        return f"flows.asks:e-no-{self.who}"

    @property
    def dead(self) -> str:
        return f"flows.dead:f-{self.who}"

    @property
    def effect(self) -> str:
        return f"flows.effect:c-{self.who}"

    @property
    def fork(self) -> str:
        return f"{COMPLETED}~{self.who}"

    def approval(self, journal: Any, run_id: str) -> str:
        [a] = journal.approvals(status="pending", run_id=run_id, limit=10)
        return str(a.id)

    def proposal(self, s: Scenario, target: str) -> str:
        path = str(s.project / "apps" / f"{self.who}.py")
        [p] = [p for p in s.journal.proposals() if p.path == path and p.target == target]
        return str(p.id)


def refusal(journal: Any) -> tuple[str, str]:
    """Operate's cause for refusing a resume of the cancelled run: (message, fix)."""
    from letitloop import operate
    from letitloop.errors import LetItLoopError

    try:
        operate.check_resumable(journal, CANCELLED)
    except LetItLoopError as exc:
        return exc.message, str(exc.fix)
    raise AssertionError(f"operate resumes {CANCELLED}, a cancelled run")


def said_error(text: str) -> tuple[str, str]:
    """``error: MESSAGE`` and ``  fix: FIX`` as the CLI and ``lil mcp`` write a refusal."""
    message, _, fix = text.strip().partition("\n  fix: ")
    assert message.startswith("error: "), text
    return message.removeprefix("error: "), fix


def wait_status(journal: Any, run_id: str, status: str, seconds: float = 90.0) -> None:
    wait_until(
        lambda: journal.get_run(run_id).run.status == status,
        seconds,
        what=lambda: f"{run_id} to be {status} (it is {journal.get_run(run_id).run.status})",
        interval=0.1,
    )


def expect(s: Scenario, who: str, by: str, did: set[str], fork: str | None = None) -> None:
    """Each action in ``did`` that ``who`` took shows in the journal, in ``by``'s name
    (``fork``: the fork it made, when the surface names its forks itself)."""
    from letitloop import operate

    j, t = s.journal, Targets(who)
    decided = {a.run_id: a for a in j.approvals(limit=1 << 20)}
    if "approve" in did:
        a = decided[t.approve]
        assert (a.status, a.decided_by) == ("approved", by), a
    if "resume" in did:
        view = operate.run_view(j, t.approve)
        assert (view.run.status, view.result) == ("completed", "true"), view.run
    said = [d.text for d in operate.decisions(j, t.reject)] if did & {"cancel", "reset"} else []
    if "reject" in did:
        a = decided[t.reject]
        assert (a.status, a.decided_by) == ("rejected", by), a
    if "cancel" in did:
        assert any(text.startswith(f"cancelled by {by}") for text in said), said
    if "reset" in did:
        assert j.get_run(t.reject).run.status == "reset"
        assert f"reset by {by}" in said, said
    dead = operate.run_view(j, t.dead) if did & {"retry", "budget"} else None
    if "retry" in did:
        assert dead is not None
        assert any(a.resolution == "rearm" and a.resolved_by == by for a in dead.attempts)
    if "budget" in did:
        assert dead is not None
        assert dead.run.budget == (round(BUDGET_USD * 1e6), None), dead.run.budget
        said = [d.text for d in operate.decisions(j, t.dead)]
        assert f"budget set to ${BUDGET_USD:g} by {by}" in said, said
    if "fork" in did:
        made = fork or t.fork
        origin = operate.run_view(j, made).run.forked_from
        assert origin is not None and (origin.run_id, origin.position) == (COMPLETED, 1)
        said = [d.text for d in operate.decisions(j, made)]
        assert f"forked from {COMPLETED} at position 1 by {by}" in said, said
    if "resolve" in did:
        assert operate.doubts(j, t.effect) == []
        [marker] = [a for a in j.get_run(t.effect).attempts if a.kind == "marker"]
        assert (marker.resolution, marker.resolved_by) == ("done", by), marker
    proposals = {p.target: p for p in j.proposals() if p.path.endswith(f"/apps/{who}.py")}
    if "apply" in did:
        p = proposals["greet"]
        assert (p.state, p.decided_by) == ("applied", by), p
        assert f"Hi from {who}" in (s.project / "apps" / f"{who}.py").read_text()
    if "reject splice" in did:
        p = proposals["bye"]
        assert (p.state, p.decided_by) == ("rejected", by), p


def outcome_json(text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(text)
    return data


def normal(s: Scenario, message: str, who: str, by: str, ids: tuple[str, ...] = ()) -> str:
    """An outcome's sentence with what differs between surfaces named: the runs of their own,
    who acted, the ids of their proposals (so every surface's sentence compares with operate's)."""
    text = message.replace(by, "<by>").replace(str(s.project), "<project>")
    for ident in ids:
        text = text.replace(ident, "<id>")
    text = text.replace(f"/apps/{who}.py", "/apps/<who>.py")
    text = text.replace(f"-{who}", "-<who>").replace(f"~{who}", "~<who>")
    return text


def op_acts(s: Scenario, by: str = "matrix:op") -> dict[str, str]:
    """Every action through operate itself; the sentence each returned, normalized."""
    import sys

    from letitloop import operate
    from letitloop.errors import LetItLoopError

    j, t = s.journal, Targets("op")
    said: dict[str, Any] = {}
    said["approve"] = operate.decide_approval(j, t.approval(j, t.approve), approved=True, by=by)
    if s.backend == "memory":  # no other process sees this journal: resume in this one, as
        from letitloop.kernel import resume_run  # `lil runs resume` does in its own

        sys.path.insert(0, str(s.project))
        try:
            assert resume_run(j, t.approve) is True
        finally:
            sys.path.remove(str(s.project))
    else:
        resume = operate.start_resume(j, t.approve, cwd=s.project, by=by)
        said["resume"] = resume.outcome
        assert resume.wait() == 0, resume.tail()
    said["reject"] = operate.decide_approval(j, t.approval(j, t.reject), approved=False, by=by)
    said["cancel"] = operate.cancel_run(j, t.reject, by=by, reason="matrix says no")
    said["reset"] = operate.reset_run(j, t.reject, by=by)
    said["retry"] = operate.retry_dead_letter(j, t.dead, by=by)
    said["budget"] = operate.raise_budget(j, t.dead, by=by, usd=BUDGET_USD)
    said["fork"] = operate.fork(j, COMPLETED, "sum", by=by, key="op")
    said["resolve"] = operate.resolve_effect(j, t.effect, "send_email", "done", by=by)
    greet, bye = t.proposal(s, "greet"), t.proposal(s, "bye")
    said["apply"] = operate.apply_splice(j, greet, by=by)
    said["reject splice"] = operate.reject_splice(j, bye, by=by)
    try:
        operate.start_resume(j, CANCELLED, cwd=s.project, by=by)
    except LetItLoopError as exc:
        assert (exc.message, exc.fix) == refusal(j)
        said["refused resume"] = f"error: {exc.message}\n  fix: {exc.fix}"
    else:
        raise AssertionError(f"operate resumed {CANCELLED}, a cancelled run")
    expect(s, "op", by, set(said) | {"resume"})
    return {
        action: normal(s, o if isinstance(o, str) else o.message, "op", by, (greet, bye))
        for action, o in said.items()
        if action != "resume"  # its pid differs
    }
