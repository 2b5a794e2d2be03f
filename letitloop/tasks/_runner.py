"""The durable task run: agents in failover order, checks after each attempt, the critique fed
back, and (with ``review``) edits to Python definitions turned into splice proposals.

A task run is the durable workflow ``lil.task`` with the run id ``lil.task:NAME``. Its steps:

    begin                 the time it started; the tree as it was is saved beside the journal
    agent NAME            one agent's turn: each of its invocations is one attempt of this step.
                          An attempt whose checks fail is rejected by the step's ``validate=``
                          (the kernel's semantic retry): the failed checks are journaled as the
                          critique and the next attempt gets them as ``feedback=``. An agent that
                          is missing, exits non-zero, times out or changes nothing ends its turn
                          with the reason, and the next agent takes over with the last critique.
    propose / review      (``review``) proposals journaled; the run suspends until all decided
    final checks          (``review``) the checks again, on the tree the person approved
    sign receipts         command checks with ``receipt = "FILE"`` run once more, signed

Killed anywhere, the same call continues: finished steps replay from the journal (no agent runs
twice for them) and the attempt in flight runs again, on and compared with the tree as it was
before it started (snapshots in ``.letitloop/tasks/NAME/``, agreed with the journal by
``_bases``). Every file the runner writes or restores is reached through ``_files``, never
through a symbolic link; a link an agent leaves is refused (see ``_links``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from letitloop.errors import DeadLetteredError
from letitloop.kernel import Invalid, current_run, current_step, durable, record_cost, step, suspend
from letitloop.tasks import _bases, _checks, _files, _killpoints, _links, _tree
from letitloop.tasks._agents import run_agent
from letitloop.tasks._model import TaskError, TaskSpec, TaskStateError, load_task

WORKFLOW = "lil.task"


def run_id_of(name: str) -> str:
    return f"{WORKFLOW}:{name}"


def state_dir(root: str | Path, name: str) -> str:
    """Where a task's snapshots live, relative to its root: per epoch, so a reset run starts
    from a fresh tree. Checked to stay inside the project (``TaskStateError`` if not)."""
    ctx = current_run.get()
    epoch = ctx.epoch if ctx is not None else 0
    return _files.tree_path(f".letitloop/tasks/{name}/epoch-{epoch}", state=True)


def run_task(
    root: str | Path,
    name: str,
    *,
    strict: bool = False,
    review: bool = False,
    supervise: bool = False,
) -> dict[str, Any]:
    """Run (or continue) the task ``tasks/NAME.toml`` under ``root``; its result as plain data.

    Raises ``Suspended`` when it waits for review, ``TaskError`` when it failed. With
    ``supervise`` the runner is a child process restarted after a crash (``@supervise``).
    """
    root = str(Path(root).resolve())
    if supervise:
        from letitloop.kernel import supervise as supervised

        call = supervised(max_restarts=5, backoff=0.5, max_backoff=5.0)(start_task)
        result: dict[str, Any] = call(root, name, strict, review)
        return result
    return start_task(root, name, strict, review)


def start_task(root: str, name: str, strict: bool, review: bool) -> dict[str, Any]:
    """Read the task file and call the durable run (top level: a supervised child imports it)."""
    task = load_task(root, name)
    return task_run(task.name, task.to_dict(), root, strict, review)


@durable(name=WORKFLOW, run_id="{name}")
def task_run(
    name: str, spec: dict[str, Any], root: str, strict: bool, review: bool
) -> dict[str, Any]:
    """The task as a durable run (see the module); its arguments are the task file's content."""
    try:
        return _task(name, spec, root, strict, review)
    except TaskStateError as exc:  # said with this task's run id in the fix
        fix = (exc.fix or "").replace("lil.task:NAME", run_id_of(name))
        raise TaskStateError(exc.message, fix=fix, run_id=run_id_of(name)) from None


def _task(name: str, spec: dict[str, Any], root: str, strict: bool, review: bool) -> dict[str, Any]:
    """``task_run``'s body: the agents' turns, review, receipts."""
    task = TaskSpec.from_dict(spec)
    began = step("begin", _begin, name, root)
    critique: str | None = None
    used = 0
    reasons: list[str] = []
    accepted: dict[str, Any] | None = None
    for index, agent in enumerate(task.agents):
        left = task.limits.attempts - used
        if left <= 0:
            reasons.append(f"the limit of {task.limits.attempts} attempts was reached")
            break
        try:
            out = step(
                f"agent {agent.name}",
                _turn,
                name,
                spec,
                root,
                index,
                critique,
                began["started"],
                strict,
                validate=_accept,
                max_validation_attempts=left,
            )
        except DeadLetteredError:  # its checks kept failing until no attempt was left
            reasons.append(
                f"{agent.name}: the checks still failed after {left} attempt(s) (`lil runs "
                f"retry {run_id_of(name)}` gives it {left} more)"
            )
            break
        _killpoints.reached("turned")
        used += out["attempt"]
        critique = out["critique"] or out["critique_in"] or critique
        if out["status"] == "checked":
            accepted = out
            break
        reasons.append(out["reason"])
        if out["status"] == "stopped":
            break
    if accepted is None:
        raise TaskError(
            f"task {name} did not succeed: {'; '.join(reasons) or 'no agent to try'}",
            fix=f"see each attempt with `lil run show {name}`; fix the cause (install or log in "
            f"to an agent CLI, raise [limits]), then `lil runs reset {run_id_of(name)}` and run "
            "it again",
            run_id=run_id_of(name),
        )
    result: dict[str, Any] = {
        "task": name,
        "status": "done",
        "agent": accepted["agent"],
        "attempts": used,
        "failovers": reasons,
        "changed": accepted["changed"],
        "outside": accepted["outside"],
        "checks": accepted["checks"],
        "proposals": [],
    }
    if review:
        proposed = step("propose", _propose, name, root)
        result["proposals"] = proposed["proposals"]
        ids = [p["id"] for p in proposed["proposals"]]
        while ids:
            state = step("review", _review_state, ids)
            if not state["pending"]:
                result["decisions"] = state["decided"]
                break
            suspend(
                f"task {name} waits for review of {len(state['pending'])} splice proposal(s): "
                f"{', '.join(state['pending'])} (`lil splice show ID`, `lil splice apply ID`), "
                f"then `lil run resume {name}`"
            )
        final = step("final checks", _final_checks, name, spec, root)
        result["checks"] = final["checks"]
        if final["critique"]:
            raise TaskError(
                f"task {name}: the reviewed tree fails its checks:\n{final['critique']}",
                fix=f"fix it by hand, or `lil runs reset {run_id_of(name)}` and run it again",
                run_id=run_id_of(name),
            )
    if any(c.receipt for c in task.checks):
        result["receipts"] = step("sign receipts", _sign_receipts, spec, root)
        if failed := [r for r in result["receipts"] if r["exit_code"] != 0]:
            raise TaskError(
                f"task {name}: the signed final run of {failed[0]['check']} exited "
                f"{failed[0]['exit_code']} (receipt {failed[0]['path']})",
                fix="the checks passed before: see the receipt's output for what differs",
                run_id=run_id_of(name),
            )
    return result


def _accept(out: dict[str, Any]) -> bool:
    """``validate=`` of an agent's turn: an attempt whose checks failed is rejected, and its
    critique becomes the next attempt's ``feedback``."""
    if out["status"] == "checked" and out["critique"]:
        raise Invalid(out["critique"])
    return True


def _begin(name: str, root: str) -> dict[str, Any]:
    origin = f"{state_dir(root, name)}/origin.json"
    if _tree.load(Path(root), origin) is None:  # a retried begin keeps the first snapshot
        _tree.save(Path(root), origin, _tree.snapshot(Path(root)))
        _killpoints.reached("begin")
    return {"started": time.time()}


def prompt_for(task: TaskSpec, critique: str | None, strict: bool) -> str:
    """The prompt an agent gets: the goal, what it may change, the checks, the critique."""
    parts = [
        f"You are working on the task {task.name!r} in the project in the current directory.",
        "",
        "Goal:",
        task.goal.strip(),
        "",
        "You may change only these paths: " + ", ".join(task.paths) + ".",
    ]
    if strict:
        parts.append("Edits outside these paths will be refused and undone.")
    if task.protect:
        parts.append("These signatures must not change: " + ", ".join(task.protect) + ".")
    if task.checks:
        parts.append("Your work is accepted when these checks pass:")
        parts += [f"- {c.label}" for c in task.checks]
    if critique:
        parts += ["", "Critique of the previous attempt:", critique]
    return "\n".join(parts) + "\n"


def _turn(
    name: str,
    spec: dict[str, Any],
    root: str,
    index: int,
    critique: str | None,
    started: float,
    strict: bool,
    feedback: str | None = None,
) -> dict[str, Any]:
    """One attempt of one agent: run it, see what it changed, check the tree."""
    task = TaskSpec.from_dict(spec)
    agent = task.agents[index]
    info = current_step()
    ctx = current_run.get()
    assert ctx is not None  # a step of task_run
    critique = feedback or critique
    base = Path(root)
    states = state_dir(root, name)
    begin = _bases.start(base, states, ctx, info)
    before = begin.before
    if begin.undone:
        _say(
            f"{agent.name}: the interrupted attempt's edits were undone ({len(begin.undone)} "
            "file(s))" + (f"; could not put back: {', '.join(begin.lost)}" if begin.lost else "")
        )
    out: dict[str, Any] = {
        "agent": agent.name,
        "attempt": begin.count,
        "critique_in": critique,
        "critique": None,
        "changed": [],
        "outside": [],
        "checks": [],
        "diff": "",
        "run": None,
    }
    remaining = started + task.limits.time - time.time()
    if remaining <= 0:
        return out | {"status": "stopped", "reason": f"time limit of {task.limits.time:g} s"}
    spent = ctx.spent_micros / 1e6
    if task.limits.cost_usd is not None and spent >= task.limits.cost_usd:
        return out | {"status": "stopped", "reason": f"cost limit of ${task.limits.cost_usd:g}"}
    prompt = prompt_for(task, critique, strict)
    _say(f"{agent.name}: attempt {begin.count}" + (" (with a critique)" if critique else ""))
    _killpoints.reached("attempt")
    run = run_agent(agent, prompt, base, min(task.limits.agent_timeout, remaining))
    _killpoints.reached("agent")
    if run.cost_usd:
        record_cost(run.cost_usd)
    after = _tree.snapshot(base)
    changed = _tree.changed(before, after)
    outside = [p for p in changed if not _tree.allowed(p, task.paths)]
    out |= {
        "prompt": prompt,
        "run": run.to_dict(),
        "changed": changed,
        "outside": outside,
        "diff": _clip(_tree.diff(before, after, changed)),
    }
    if run.failure is not None:
        _tree.restore(base, before, changed)  # a failed attempt's half-done edits are undone
        out |= {"status": "failover", "reason": f"{agent.name}: {run.failure}"}
    elif not changed:
        out |= {"status": "failover", "reason": f"{agent.name}: made no change"}
    else:
        checks: list[_checks.CheckResult] = []
        refused, after = _links.refuse(base, before, after, changed, checks)
        if strict and (kept := [p for p in outside if p not in refused]):
            lost = _tree.restore(base, before, kept)
            after = _tree.snapshot(base)
            detail = f"edits outside the allowed paths were refused and undone: {', '.join(kept)}"
            if lost:
                detail += f" (binary or blocked, left as is: {', '.join(lost)})"
            checks.append(_checks.CheckResult("allowed paths (--strict)", False, detail))
        origin = _tree.load(base, f"{states}/origin.json") or before
        since = _tree.changed(origin, after)
        checks += _checks.run_checks(task, base, origin, after, since)
        results = [c.to_dict() for c in checks]
        out |= {"status": "checked", "checks": results, "critique": _checks.critique(results)}
        out["tree"] = _bases.save_after(base, states, info, after)  # the next attempt's base
        _killpoints.reached("saved")
    failed = [c["name"] for c in out["checks"] if not c["ok"]]
    verdict = out.get("reason") or (
        f"{agent.name}: " + ("failed " + ", ".join(failed) if failed else "checks passed")
    )
    _say(f"{verdict} ({run.duration:.1f} s, {len(changed)} file(s) changed)")
    _killpoints.reached("returned")
    return out


def _clip(diff: str, limit: int = 200_000) -> str:
    """A diff as journaled: whole up to ``limit`` characters, else its start and a note."""
    if len(diff) <= limit:
        return diff
    return diff[:limit] + f"\n… ({len(diff) - limit} more characters not journaled)\n"


def _say(message: str) -> None:
    """A progress line on stderr, when the CLI asks for them (``LIL_TASK_PROGRESS``, which a
    supervised runner inherits)."""
    if os.environ.get("LIL_TASK_PROGRESS"):
        print(f"lil run: {message}", file=sys.stderr, flush=True)


def _propose(name: str, root: str) -> dict[str, Any]:
    from letitloop.tasks._review import propose_definitions

    return {"proposals": propose_definitions(name, Path(root), state_dir(root, name))}


def _review_state(ids: list[str]) -> dict[str, Any]:
    from letitloop.splice._proposals import list_proposals

    ctx = current_run.get()
    by_id = {p.id: p for p in list_proposals(journal=ctx.journal if ctx else None)}
    pending = [i for i in ids if i in by_id and by_id[i].state in ("pending", "conflict")]
    decided = {i: by_id[i].state for i in ids if i in by_id and i not in pending}
    return {"pending": pending, "decided": decided}


def _sign_receipts(spec: dict[str, Any], root: str) -> list[dict[str, Any]]:
    """The final check run, signed: each command check with a ``receipt`` runs once more under
    ``letitloop.receipts.run`` (keys from $LIL_RECEIPT_KEY / $LIL_RECEIPT_SIGNING_KEY)."""
    from letitloop.receipts._run import run

    task = TaskSpec.from_dict(spec)
    out = []
    for check in task.checks:
        if check.receipt:
            _files.tree_path(check.receipt)  # before the command runs: the path is inside
            signed = run(list(check.run), protect=task.protect, cwd=root, stream=False)
            _files.replace_file(Path(root), check.receipt, signed.to_json().encode())
            out.append({"check": check.label, "path": check.receipt, "exit_code": signed.exit_code})
    return out


def _final_checks(name: str, spec: dict[str, Any], root: str) -> dict[str, Any]:
    task = TaskSpec.from_dict(spec)
    base = Path(root)
    now = _tree.snapshot(base)
    origin = _tree.load(base, f"{state_dir(root, name)}/origin.json") or now
    results = [
        c.to_dict() for c in _checks.run_checks(task, base, origin, now, _tree.changed(origin, now))
    ]
    return {"checks": results, "critique": _checks.critique(results)}
