"""``lil runs``: list, show, resume, fork, cancel, retry, budget, reset and garbage-collect runs."""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import click

from letitloop.cli import _output as out
from letitloop.cli._board import show_board
from letitloop.cli._shared import (
    HUGE,
    Duration,
    journal_option,
    journal_spec,
    json_option,
    open_cli_journal,
    who,
)
from letitloop.operate import (
    RunSummary,
    RunView,
    attempt_seconds,
    cancel_run,
    fork,
    list_summaries,
    raise_budget,
    reset_run,
    retry_dead_letter,
    run_json,
    run_view,
    shown as shown_run,
    summarize,
    view_json,
)

if TYPE_CHECKING:
    from letitloop.journal import AttemptInfo

STATUSES = ("running", "interrupted", "suspended", "completed", "failed", "cancelled", "reset")
GC_STATUSES = ("completed", "failed", "cancelled", "reset", "interrupted")


@click.group()
def runs() -> None:
    """List, inspect, resume, cancel, retry, budget, reset and gc runs."""


@runs.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only runs with this status.")
@click.option("--workflow", metavar="NAME", help="Only runs of this workflow (module.qualname).")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@journal_option
def list_cmd(status: str | None, workflow: str | None, limit: int, as_json: bool) -> None:
    """List runs, most recently updated first.

    \b
    Example:
        lil runs list --status interrupted --limit 20
    """
    found = list_summaries(open_cli_journal(), status=status, workflow=workflow, limit=limit)
    if as_json:
        out.emit_json([run_json(r) for r in found])
        return
    if not found:
        out.say("no runs" + (" match" if status or workflow else " in this journal yet"))
        return
    out.say(runs_table(found))


def runs_table(found: list[RunSummary]) -> Any:
    table = out.make_table(
        "run id",
        "workflow",
        "status",
        "steps",
        "current step",
        "duration",
        "cost",
        "holder",
        "updated",
        right=("steps", "duration", "cost"),
    )
    for r in found:
        shown = shown_run(r)
        table.add_row(
            out.text(r.run_id),
            out.text(r.workflow),
            out.status_text(r.status),
            shown["steps"],
            out.text(shown["current"]),
            shown["duration"],
            shown["cost"],
            out.text(r.holder or "-"),
            out.ago(r.updated),
        )
    return table


@runs.command("show")
@click.argument("run")
@click.option("--traceback", "with_traceback", is_flag=True, help="Print the run's traceback.")
@json_option
@journal_option
def show_cmd(run: str, with_traceback: bool, as_json: bool) -> None:
    """Show one run: its header, every attempt of every step, and its result.

    RUN is a run id, its key, or an unambiguous prefix or suffix of one.

    \b
    Example:
        lil runs show pipeline.main:customer-42
    """
    journal = open_cli_journal()
    view = run_view(journal, run)
    if as_json:
        out.emit_json(view_json(view))
        return
    show_view(view, with_traceback)
    from letitloop.cli._notify import show_wait

    show_wait(journal, view)  # a step waiting for a shared rate limit's capacity
    show_decisions(journal, view.run.run_id)


def show_decisions(journal: Any, run_id: str) -> None:
    """Who intervened on the run (forked, reset, cancelled, restarted, budgeted, resolved,
    answered), the last ten, with their names as journaled (a person's, or an agent's through
    ``lil mcp``)."""
    from letitloop.operate import decisions

    found = decisions(journal, run_id, limit=10)
    if found:
        out.say("")
        out.say(out.text("decisions:", "bold"))
        for d in found:
            out.say(out.text(f"  {out.stamp(d.ts)}  {d.text}"))


def show_view(view: RunView, with_traceback: bool = False) -> None:
    r = view.run
    shown = shown_run(r)
    rows: list[tuple[str, Any]] = [
        ("run", out.text(r.run_id, "bold")),
        ("workflow", r.workflow),
        ("status", out.status_text(r.status)),
        ("attempts", f"{r.attempt} (epoch {r.epoch})"),
        ("steps", shown["steps"]),
        ("created", out.stamp(r.created)),
        ("updated", out.stamp(r.updated)),
        ("ran for", shown["duration"]),  # the sum of its tries, not the time since created
    ]
    if r.cost_micros or r.budget:
        rows.append(("cost", f"{shown['cost']} ({r.tokens} tokens)"))
    if r.budget:
        rows.append(("budget", shown["budget"]))
    if r.current_step:
        rows.append(("current step", r.current_step))
    if r.holder:
        rows.append(("held by", r.holder))
    if r.parent:
        rows.append(("parent run", r.parent))
    if r.error:
        rows.append(("error", out.text(out.error_line(r.error), "red")))
        if r.error.get("fix"):
            rows.append(("fix", r.error["fix"]))
    if r.actions:
        rows.append(("you may", ", ".join(r.actions)))
    out.say(out.kv_table(rows))
    if r.forked_from is not None:
        o = r.forked_from
        at = f"{o.step!r} (position {o.position})" if o.step else o.position
        out.say(out.text(f"forked from {o.run_id} at {at}, epoch {o.epoch}", "cyan"))
    if with_traceback and r.error and r.error.get("traceback"):
        out.say("")
        out.say(out.text(r.error["traceback"].rstrip()))
    out.say("")
    if view.attempts:
        out.say(attempts_table(view.attempts))
    else:
        out.say("no steps journaled in this epoch yet")
    if view.result is not None:
        out.say(out.text("result:", "bold"), out.text(view.result))
    show_board(view)
    for m in view.maps:
        out.say("")
        out.say(out.text(f"map {m.name!r} at position {m.position}:", "bold"), m.summary())
        table = out.make_table("item", "run id", "status", "cost", right=("item", "cost"))
        for index, child in m.items:
            table.add_row(
                str(index),
                child.run_id,
                out.status_text(child.status),
                out.money(child.cost_micros),
            )
        out.say(table)


def attempts_table(attempts: list[AttemptInfo]) -> Any:
    costs = any(a.cost_micros for a in attempts)  # per attempt: they add up to the run's cost
    table = out.make_table(
        "pos",
        "try",
        "kind",
        "name",
        "status",
        "took",
        "size",
        *(["cost"] if costs else []),
        "preview / error",
        right=("pos", "try", "took", "size", "cost"),
    )
    for a in attempts:
        if a.status == "failed":
            detail = out.text(out.one_line(out.error_line(a.error), 80), "red")
        elif a.kind == "marker" and a.status != "completed":
            detail = out.text(marker_note(a), "yellow")
        else:
            detail = out.text(out.one_line(a.preview, 60) if a.preview is not None else "-")
        if a.kind == "marker" and a.resolution and a.status == "failed":
            detail.append(f" (resolved {a.resolution} by {a.resolved_by})", "yellow")
        table.add_row(
            str(a.position),
            str(a.attempt),
            a.kind,
            out.text(a.name),
            out.status_text(a.status),
            out.duration(attempt_seconds(a)),
            out.size(a.size) if a.status == "completed" else "-",
            *([out.money(a.cost_micros)] if costs else []),
            detail,
        )
    return table


def marker_note(a: AttemptInfo) -> str:
    if a.resolution:
        return f"resolved {a.resolution} by {a.resolved_by}"
    return "in doubt: the block started but never completed"


@runs.command("reset")
@click.argument("run")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--by", metavar="NAME", help="Who resets it (default: user@host).")
@click.option("-m", "--comment", metavar="TEXT", help="Why: kept in the journal with the reset.")
@json_option
@journal_option
def reset_cmd(run: str, yes: bool, by: str | None, comment: str | None, as_json: bool) -> None:
    """Start a run over: the next call executes every step again.

    The journaled attempts stay in the journal's history (a new epoch begins).

    \b
    Example:
        lil runs reset pipeline.main:customer-42 --yes
    """
    journal = open_cli_journal()
    run_id = journal.find_run(run)
    before = journal.get_run(run_id).run
    if not yes:
        click.confirm(
            f"Reset {run_id} ({before.status}, {before.steps_done} steps done)? The next call "
            "runs every step again",
            abort=True,
            err=True,
        )
    done = reset_run(journal, run_id, by=by or who(), comment=comment)
    after = journal.get_run(run_id).run
    if as_json:
        out.emit_json(done.to_json() | {"reset": True, "was": before, "now": after})
        return
    out.say(out.text(done.message, "bold"))


@runs.command("retry")
@click.argument("run")
@click.option(
    "--from",
    "step",
    metavar="STEP",
    help="Which dead-lettered step, by name or position (default: the run's one).",
)
@click.option("--by", metavar="NAME", help="Who re-arms it (default: user@host).")
@json_option
@journal_option
def retry_cmd(run: str, step: str | None, by: str | None, as_json: bool) -> None:
    """Give a dead-lettered step a fresh attempt budget; the next call runs it again.

    Its earlier attempts stay in the journal.

    \b
    Example:
        lil runs retry pipeline.main:customer-42
    """
    target: str | int | None = int(step) if step and step.isdigit() else step
    done = retry_dead_letter(open_cli_journal(), run, by=by or who(), step=target)
    if as_json:
        out.emit_json(done.to_json() | {"rearmed": True, "step": target})
        return
    out.say(out.text(done.message, "bold"))


@runs.command("resume")
@click.argument("run")
@json_option
@journal_option
def resume_cmd(run: str, as_json: bool) -> None:
    """Continue a suspended or interrupted run in this process, by importing its workflow.

    Journaled steps replay; the run goes on from where it stopped. Works for workflows defined
    in a module or a script file (run it from the same directory); other runs say why not.
    Importing runs the module's top-level code again: keep a script's own calls under an
    ``if __name__ == "__main__":`` guard.
    Exit status 3 means the run suspended again (for example, an approval is still pending).

    \b
    Example:
        lil runs resume pipeline.main:customer-42
    """
    from letitloop.cli import _resumed
    from letitloop.errors import LetItLoopError, Suspended
    from letitloop.journal import find_location, forked_from
    from letitloop.kernel import describe_origin, resume_run

    journal = open_cli_journal()
    run_id = journal.find_run(run)
    os.environ["LIL_JOURNAL"] = str(find_location(journal_spec()))  # the workflow's default
    if (origin := forked_from(journal, run_id)) is not None:  # its reused steps are another's
        out.stderr_write(f"note: {describe_origin(run_id, origin)}")
    _resumed.note_imports(journal.get_run(run_id).entry)  # before the import runs it
    try:
        result = resume_run(journal, run_id)
    except Suspended as exc:
        _resumed.suspended(run_id, exc, as_json)
    except LetItLoopError:
        raise  # the library's own error: `error:` and `fix:` as for every command
    except Exception as exc:
        _resumed.failed(run_id, exc, as_json)
    if as_json:
        out.emit_json({"run_id": run_id, "status": "completed", "result": result})
        return
    text = json.dumps(result, default=repr, ensure_ascii=False)
    short = text if len(text) <= 2000 else text[:2000] + f"… ({len(text)} characters)"
    out.say(out.text(f"{run_id} completed", "bold green"), out.text(f"result: {short}"), sep="\n")


@runs.command("fork")
@click.argument("run")
@click.option(
    "--from",
    "step",
    metavar="STEP",
    required=True,
    help="Run from this step on: a position or "
    "a step's name (its first position); the steps before it are reused.",
)
@click.option(
    "--args",
    "args_json",
    metavar="JSON",
    help='New arguments: a JSON list (positional), an object (keywords) or {"args": [...], '
    '"kwargs": {...}}; default: the run\'s own.',
)
@click.option(
    "--key",
    metavar="LABEL",
    help="Label the fork: its run key is the run's key, '~' and LABEL (default: random), a key "
    "no call of the workflow computes.",
)
@click.option("--run", "run_now", is_flag=True, help="Run the fork now, as `lil runs resume` does.")
@click.option("--by", metavar="NAME", help="Who forks it (default: user@host).")
@json_option
@journal_option
def fork_cmd(
    run: str,
    step: str,
    args_json: str | None,
    key: str | None,
    run_now: bool,
    by: str | None,
    as_json: bool,
) -> None:
    """Fork a run: a new run that reuses every journaled step before STEP and runs from it on.

    The original run is untouched; the fork records where it came from. A run some process is
    executing is refused. Run the fork with --run, `lil runs resume FORK`, or in Python with
    letitloop.run_fork(FORK, workflow).

    \b
    Example:
        lil runs fork pipeline.main:customer-42 --from summarize --args '["customer-7"]' --run
    """
    from letitloop.journal import forked_from

    journal = open_cli_journal()
    args, kwargs = _fork_arguments(args_json)
    done = fork(
        journal, journal.find_run(run), step, by=by or who(), key=key, args=args, kwargs=kwargs
    )
    fork_id = str(done.data["fork"])
    origin = forked_from(journal, fork_id)
    report = {
        "run_id": fork_id,
        "forked_from": origin._asdict() if origin is not None else None,
        "reused": done.data["reused"],
        "resumable": done.data["resumable"],
        "message": done.message,
    }
    if run_now:
        report["result"] = _run_fork_now(journal, fork_id, as_json)
        report["status"] = "completed"
    if as_json:
        out.emit_json(report)
        return
    lines = [out.text(done.message, "bold")]
    if run_now:
        lines.append(out.text(f"{fork_id} completed", "bold green"))
        lines.append(out.text(f"result: {_short_json(report['result'])}"))
    else:
        lines.append(out.text(f"run it: lil runs resume {fork_id}"))
    out.say(*lines, sep="\n")


def _fork_arguments(text: str | None) -> tuple[Any, Any]:
    """``--args`` as (args, kwargs), or (None, None) for the source's own arguments."""
    if text is None:
        return None, None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--args") from None
    if isinstance(value, list):
        return value, {}
    if isinstance(value, dict) and set(value) <= {"args", "kwargs"} and value:
        a, k = value.get("args", []), value.get("kwargs", {})
        if isinstance(a, list) and isinstance(k, dict):
            return a, k
    if isinstance(value, dict):
        return [], value
    raise click.BadParameter(
        'give a JSON list, an object, or {"args": [...], "kwargs": {...}}', param_hint="--args"
    )


def _run_fork_now(journal: Any, fork_id: str, as_json: bool) -> Any:
    """Run a fork in this process as ``lil runs resume`` would (exit 3 if it suspends)."""
    from letitloop.cli import _resumed
    from letitloop.errors import LetItLoopError, Suspended
    from letitloop.journal import find_location
    from letitloop.kernel import resume_run

    os.environ["LIL_JOURNAL"] = str(find_location(journal_spec()))  # the workflow's default
    _resumed.note_imports(journal.get_run(fork_id).entry)
    try:
        return resume_run(journal, fork_id)
    except Suspended as exc:
        _resumed.suspended(fork_id, exc, as_json, what="suspended")
    except LetItLoopError:
        raise
    except Exception as exc:
        _resumed.failed(fork_id, exc, as_json)


def _short_json(value: Any) -> str:
    text = json.dumps(value, default=repr, ensure_ascii=False)
    return text if len(text) <= 2000 else text[:2000] + f"… ({len(text)} characters)"


@runs.command("cancel")
@click.argument("run")
@click.option("--reason", metavar="TEXT", help="Why; shown with the run.")
@click.option("--by", metavar="NAME", help="Who cancels it (default: user@host).")
@json_option
@journal_option
def cancel_cmd(run: str, reason: str | None, by: str | None, as_json: bool) -> None:
    """Stop a run for good: a process executing it stops at its next journal write, and calling
    it again raises RunCancelledError until the run is reset.

    \b
    Example:
        lil runs cancel pipeline.main:customer-42 --reason "wrong customer"
    """
    done = cancel_run(open_cli_journal(), run, by=by or who(), reason=reason)
    if as_json:
        out.emit_json(done.to_json() | {"cancelled": True})
        return
    out.say(
        out.text(done.message, "bold"),
        out.text(f"`lil runs reset {done.run_id}` starts it over"),
        sep="\n",
    )


@runs.command("budget")
@click.argument("run")
@click.option("--usd", type=float, help="The run's budget in US dollars.")
@click.option("--tokens", type=click.IntRange(min=0), help="The run's budget in tokens.")
@click.option("--by", metavar="NAME", help="Who sets it (default: user@host).")
@json_option
@journal_option
def budget_cmd(
    run: str, usd: float | None, tokens: int | None, by: str | None, as_json: bool
) -> None:
    """Set or raise a run's budget; a run suspended by its budget continues when called again.

    \b
    Example:
        lil runs budget research:durable-agents --usd 5
    """
    if usd is None and tokens is None:
        raise click.UsageError("give --usd, --tokens or both")
    journal = open_cli_journal()
    names = ("--usd", "--tokens")
    done = raise_budget(journal, run, by=by or who(), usd=usd, tokens=tokens, names=names)
    info = journal.get_run(str(done.run_id)).run
    if as_json:
        out.emit_json(done.to_json() | {"run": run_json(summarize(info))})
        return
    out.say(
        out.text(done.message, "bold"),
        out.text(f"spent so far {out.money(info.cost_micros)}"),
        sep="\n",
    )


@runs.command("gc")
@click.option(
    "--older-than",
    type=Duration(),
    default="7d",
    show_default=True,
    help="Delete runs last updated longer ago than this (30m, 12h, 7d, 2w).",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(GC_STATUSES),
    default=("completed",),
    show_default=True,
    help="Statuses to delete; repeat for several.",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@journal_option
def gc_cmd(older_than: float, statuses: tuple[str, ...], yes: bool, as_json: bool) -> None:
    """Delete old runs with all their steps and events. Runs being executed are never deleted.

    \b
    Example:
        lil runs gc --older-than 30d --status completed --status failed --yes
    """
    journal = open_cli_journal()
    cutoff = time.time() - older_than
    doomed = [
        r.run_id
        for status in dict.fromkeys(statuses)
        for r in journal.list_runs(status=status, limit=HUGE)
        if r.updated < cutoff
    ]
    deleted = 0
    if doomed:
        if not yes:
            click.confirm(
                f"Delete {len(doomed)} run(s) ({', '.join(statuses)}) not updated for "
                f"{out.duration(older_than)}?",
                abort=True,
                err=True,
            )
        stored = tuple(dict.fromkeys("running" if s == "interrupted" else s for s in statuses))
        deleted = journal.gc(older_than=cutoff, statuses=stored)
    if as_json:
        out.emit_json(
            {"deleted": deleted, "older_than": cutoff, "statuses": list(statuses), "runs": doomed}
        )
        return
    if not doomed:
        out.say(
            f"nothing to delete: no {'/'.join(statuses)} run older than {out.duration(older_than)}"
        )
        return
    out.say(f"deleted {deleted} run(s) not updated for {out.duration(older_than)}")
