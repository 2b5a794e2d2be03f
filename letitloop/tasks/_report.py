"""Task runs read back from the journal as plain data, for ``lil run list|show`` and front ends.

A task run is an ordinary run (workflow ``lil.task``), summarized as every surface summarizes a
run (``operate.list_summaries``: steps done out of known, the time its tries really ran, cost,
and the same formatted numbers under ``shown``); this module only names its parts: each attempt
of an ``agent NAME`` step is one agent invocation, whose journaled outcome (an accepted or
rejected output) holds the agent, exit code, duration, diff, checks and critique. Outputs are
decoded only when they are JSON: nothing here runs code read from the journal.
"""

from __future__ import annotations

import json
from typing import Any

from letitloop import operate
from letitloop.journal import AttemptInfo, Journal
from letitloop.tasks._runner import WORKFLOW, run_id_of

_SHOWN = {"suspended": "waiting"}


def task_status(status: str) -> str:
    """A run's status as a task's: a suspended task run waits for review."""
    return _SHOWN.get(status, status)


def task_runs(journal: Journal, limit: int = 1000) -> list[dict[str, Any]]:
    """Every task run, most recently updated first."""
    return [
        {
            "task": r.key,
            "run_id": r.run_id,
            "status": task_status(r.status),
            "steps_done": r.steps_done,
            "steps_total": r.steps_total,
            "seconds": r.seconds,
            "updated": r.updated,
            "cost_usd": r.cost_micros / 1e6,
            "error": (r.error or {}).get("message"),
            "actions": list(r.actions),
            "shown": operate.shown(r) | {"error": operate.error_line(r.error)},
        }
        for r in operate.list_summaries(journal, workflow=WORKFLOW, limit=limit)
    ]


def find_task_run(journal: Journal, name: str) -> str:
    """The run id of task ``name`` (or of any run id or unambiguous prefix given)."""
    wanted = run_id_of(name)
    if any(r.run_id == wanted for r in journal.list_runs(workflow=WORKFLOW, limit=10_000)):
        return wanted
    return journal.find_run(name)


def task_detail(journal: Journal, name: str) -> dict[str, Any]:
    """One task run: its status and every agent attempt with its outcome."""
    run_id = find_task_run(journal, name)
    detail = journal.get_run(run_id)
    r = detail.run
    attempts = [
        _attempt(journal, run_id, r.epoch, a)
        for a in detail.attempts
        if a.kind == "step" and a.name.startswith("agent ")
    ]
    result = None
    if detail.result is not None and detail.result[0] == "json":
        result = json.loads(detail.result[1])
    proposals = [
        {"id": p.id, "path": p.path, "target": p.target, "state": p.state}
        for p in journal.proposals()
        if p.origin == run_id
    ]
    summary = operate.summary_of(journal, detail)
    return {
        "task": r.key,
        "run_id": run_id,
        "status": task_status(r.status),
        "error": r.error,
        "cost_usd": r.cost_micros / 1e6,
        "seconds": summary.seconds,
        "actions": list(summary.actions),
        "shown": operate.shown(summary),
        "attempts": attempts,
        "proposals": proposals,
        "result": result,
    }


def _attempt(journal: Journal, run_id: str, epoch: int, a: AttemptInfo) -> dict[str, Any]:
    outcome: dict[str, Any] = {}
    if a.codec == "json" and a.size:
        try:
            codec, data = journal.get_output(run_id, epoch, a.position, a.attempt)
            if codec == "json":
                outcome = json.loads(data)
        except Exception:  # an output the journal cannot serve: shown without it
            outcome = {}
    err = a.error or {}
    if a.status == "completed":
        verdict = "accepted" if outcome.get("status") == "checked" else outcome.get("status")
    elif err.get("class") == "invalid":
        verdict = "rejected"
    else:
        verdict = a.status  # started (in flight, or killed), failed
    run = outcome.get("run") or {}
    return {
        "position": a.position,
        "attempt": a.attempt,
        "agent": a.name.removeprefix("agent "),
        "verdict": verdict,
        "exit_code": run.get("exit_code"),
        "duration": run.get("duration"),
        "changed": outcome.get("changed", []),
        "outside": outcome.get("outside", []),
        "reason": outcome.get("reason") or (err.get("message") if verdict == "failed" else None),
        "critique": outcome.get("critique"),
        "critique_in": outcome.get("critique_in"),
        "checks": outcome.get("checks", []),
        "diff": outcome.get("diff", ""),
        "started": a.started,
    }
