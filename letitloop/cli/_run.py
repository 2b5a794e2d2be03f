"""``lil run``: run a coding-agent task durably, and list, show, resume or cancel task runs.

    lil run --task NAME [--supervise] [--strict] [--review]
    lil run list | show NAME | resume NAME | cancel NAME

Thin over ``letitloop.tasks`` (the runner) and ``letitloop.tasks._report`` (what the journal
says about task runs). Exit status 3 means the task waits (for review of its proposals).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import journal_option, journal_spec, json_option, open_cli_journal, who


def _use_journal() -> None:
    """The runner's durable run finds its journal the way every lil command does."""
    from letitloop.journal import find_location

    os.environ["LIL_JOURNAL"] = str(find_location(journal_spec()))


@click.group("run", invoke_without_command=True)
@click.option("--task", "task", metavar="NAME", help="Run tasks/NAME.toml (or a .toml path).")
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=".",
    help="The project the task works in (holds tasks/). Default: the current directory.",
)
@click.option("--supervise", is_flag=True, help="Restart the runner if it crashes.")
@click.option("--strict", is_flag=True, help="An edit outside the task's paths is a failure.")
@click.option("--review", is_flag=True, help="Edits to Python definitions become splice proposals.")
@json_option
@journal_option
@click.pass_context
def run_group(
    ctx: click.Context,
    task: str | None,
    root: Path,
    supervise: bool,
    strict: bool,
    review: bool,
    as_json: bool,
) -> None:
    """Run a coding-agent task durably (--task NAME).

    Give a coding agent a task (tasks/NAME.toml) and come back to a checked result that
    survived crashes. The same command again continues an interrupted task where it stopped.

    \b
    Examples:
        lil run --task auth-refactor --supervise --strict
        lil run show auth-refactor
    """
    if ctx.invoked_subcommand is not None:
        return
    if task is None:
        raise click.UsageError("give --task NAME, or a command: list, show, resume, cancel")
    from letitloop.errors import Suspended
    from letitloop.tasks._runner import run_task

    _use_journal()
    os.environ["LIL_TASK_PROGRESS"] = "1"
    try:
        result = run_task(root, task, strict=strict, review=review, supervise=supervise)
    except Suspended as exc:
        _waiting(task, exc.message, as_json)
        raise SystemExit(3) from None
    _done(result, as_json)


def _waiting(task: str, why: str, as_json: bool) -> None:
    if as_json:
        out.emit_json({"task": task, "status": "waiting", "reason": why})
        return
    out.say(out.text(f"task {task} waiting", "bold blue"), out.text(why), sep="\n")


def _done(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        out.emit_json(result)
        return
    out.say(
        out.text(
            f"task {result['task']} done by {result['agent']} in {result['attempts']} attempt(s)",
            "bold green",
        )
    )
    for reason in result["failovers"]:
        out.say(out.text(f"  failed over: {reason}", "yellow"))
    for check in result["checks"]:
        out.say(out.check_mark(check["ok"]), out.text(check["name"]))
    if result["changed"]:
        out.say(out.text("changed: " + ", ".join(result["changed"])))
    if result["outside"]:
        out.say(out.text("outside the task's paths: " + ", ".join(result["outside"]), "yellow"))
    for p in result.get("proposals", []):
        state = result.get("decisions", {}).get(p["id"], "pending")
        out.say(out.text(f"proposal {p['id']}: {p['target']} in {p['path']} ({state})"))


@run_group.command("list")
@json_option
@journal_option
def list_cmd(as_json: bool) -> None:
    """List task runs, most recently updated first."""
    from letitloop.tasks._report import task_runs

    rows = task_runs(open_cli_journal())
    if as_json:
        out.emit_json(rows)
        return
    if not rows:
        out.say("no task runs in this journal yet (start one with `lil run --task NAME`)")
        return
    table = out.make_table(
        "task", "status", "steps", "ran", "cost", "updated", "error", right=["steps", "ran", "cost"]
    )
    for r in rows:
        shown = r["shown"]
        table.add_row(
            out.text(r["task"], "bold"),
            out.status_text(r["status"]),
            shown["steps"],
            shown["duration"],
            shown["cost"],
            out.ago(r["updated"]),
            out.one_line(shown["error"], 60),
        )
    out.say(table)


@run_group.command("show")
@click.argument("name")
@click.option("--diff", "with_diff", is_flag=True, help="Print each attempt's diff.")
@json_option
@journal_option
def show_cmd(name: str, with_diff: bool, as_json: bool) -> None:
    """Show a task run: each agent attempt, its exit code, time, changes, checks and critique."""
    from letitloop.tasks._report import task_detail

    d = task_detail(open_cli_journal(), name)
    if as_json:
        out.emit_json(d)
        return
    out.say(out.text(f"task {d['task']}", "bold"), out.status_text(d["status"]), d["run_id"])
    shown = d["shown"]
    out.say(f"steps {shown['steps']} · ran {shown['duration']} · cost {shown['cost']}")
    if d["error"]:
        out.say(out.text(out.error_line(d["error"]), "red"))
    table = out.make_table(
        "#", "agent", "verdict", "exit", "time", "changed", "reason / failed checks", right=["#"]
    )
    for a in d["attempts"]:
        failed = [c["name"] for c in a["checks"] if not c["ok"]]
        table.add_row(
            f"{a['position']}.{a['attempt']}",
            a["agent"],
            out.status_text(a["verdict"]),
            "-" if a["exit_code"] is None else str(a["exit_code"]),
            "-" if a["duration"] is None else out.duration(a["duration"]),
            ", ".join(a["changed"]) or "-",
            a["reason"] or ", ".join(failed) or "",
        )
    out.say(table)
    for a in d["attempts"]:
        if a["critique"]:
            out.say(out.text(f"critique after {a['position']}.{a['attempt']}:", "bold"))
            out.say(out.text(a["critique"]))
        if with_diff and a["diff"]:
            out.say(out.text(f"diff of {a['position']}.{a['attempt']}:", "bold"))
            out.say(out.text(a["diff"]))
    for p in d["proposals"]:
        out.say(out.text(f"proposal {p['id']}: {p['target']} in {p['path']} ({p['state']})"))


@run_group.command("resume")
@click.argument("name")
@json_option
@journal_option
def resume_cmd(name: str, as_json: bool) -> None:
    """Continue a task run that waits for review or was interrupted, with its journaled task."""
    from letitloop.errors import Suspended
    from letitloop.kernel import resume_run
    from letitloop.tasks._report import find_task_run

    _use_journal()
    os.environ["LIL_TASK_PROGRESS"] = "1"
    journal = open_cli_journal()
    run_id = find_task_run(journal, name)
    try:
        result = resume_run(journal, run_id)
    except Suspended as exc:
        _waiting(name, exc.message, as_json)
        raise SystemExit(3) from None
    _done(result, as_json)


@run_group.command("cancel")
@click.argument("name")
@click.option("--reason", metavar="TEXT", help="Why; shown with the run.")
@json_option
@journal_option
def cancel_cmd(name: str, reason: str | None, as_json: bool) -> None:
    """Stop a task run for good (a runner executing it stops at its next journal write)."""
    from letitloop.operate import cancel_run
    from letitloop.tasks._report import find_task_run

    journal = open_cli_journal()
    done = cancel_run(journal, find_task_run(journal, name), by=who(), reason=reason)
    if as_json:
        out.emit_json({"task": name, "run_id": done.run_id, "cancelled": True} | done.to_json())
        return
    out.say(out.text(f"cancelled task {name}", "bold"), f"({done.message})")
