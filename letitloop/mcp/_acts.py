"""The act tools: the operate layer's actions, taken in the name of the agent's MCP client.

Each is offered only when the user allowed it (``Settings.allow``); ``by`` is
``mcp:CLIENT/VERSION`` from the client's own ``initialize``, journaled with the decision, so
``lil runs show``, lil-tui and the lab say who acted. A refused action raises the error that
says why, the same as on every other surface. None of a person's decisions is here.
"""

from __future__ import annotations

from typing import Any

from letitloop import operate
from letitloop.mcp._service import Service, shrink

# processes started for agents, kept so their exit is reaped (a zombie is never left behind)
STARTED: list[Any] = []


def _reap() -> None:
    STARTED[:] = [p for p in STARTED if p.poll() is None]


def resume_run(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    _reap()
    resume = operate.start_resume(svc.journal, a["run"], cwd=svc.root, by=by)
    STARTED.append(resume.process)
    return resume.outcome.to_json() | {"by": by, "log": str(resume.log)}


def retry_run(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    step = a.get("step")
    target = int(step) if isinstance(step, int | float) else step
    done = operate.retry_dead_letter(svc.journal, a["run"], by=by, step=target)
    return done.to_json() | {"by": by}


def raise_budget(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    usd, tokens = a.get("usd"), a.get("tokens")
    done = operate.raise_budget(
        svc.journal,
        a["run"],
        by=by,
        usd=None if usd is None else float(usd),
        tokens=None if tokens is None else int(tokens),
    )
    return done.to_json() | {"by": by}


def cancel_run(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    done = operate.cancel_run(svc.journal, a["run"], by=by, reason=a.get("reason") or None)
    return done.to_json() | {"by": by}


def fork_run(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    step = a["from_step"]
    target = int(step) if isinstance(step, int | float) else step
    done = operate.fork(
        svc.journal,
        a["run"],
        target,
        by=by,
        key=a.get("key") or None,
        args=a.get("args"),
        kwargs=a.get("kwargs"),
    )
    return done.to_json() | {"by": by}


def propose_splice(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    path = svc.inside(a["path"], "file")
    done = operate.propose_splice(
        svc.journal, path, a["target"], a["code"], by=by, reason=a.get("reason") or ""
    )
    return done.to_json() | {"by": by}


def start_task(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    _reap()
    started = operate.start_task(
        svc.journal,
        a["task"],
        root=svc.root,
        by=by,
        strict=bool(a.get("strict")),
        review=bool(a.get("review")),
    )
    STARTED.append(started.process)
    return started.outcome.to_json() | {"by": by}


def verify_receipt(svc: Service, a: dict[str, Any], by: str) -> dict[str, Any]:
    path = svc.inside(a["path"], "receipt")
    verdict = operate.check_receipt(
        path,
        root=svc.root,
        commit=a.get("commit") or None,
        allow_failures=bool(a.get("allow_failures")),
    )
    return dict(shrink(verdict, 1000))


ACTS = {
    "resume_run": resume_run,
    "retry_run": retry_run,
    "raise_budget": raise_budget,
    "cancel_run": cancel_run,
    "fork_run": fork_run,
    "propose_splice": propose_splice,
    "start_task": start_task,
    "verify_receipt": verify_receipt,
}
