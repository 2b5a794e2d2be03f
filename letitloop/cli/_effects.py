"""``lil effects``: side effects in doubt (``atomic_marker`` blocks that never completed)."""

from __future__ import annotations

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import (
    journal_option,
    json_option,
    marker_ref,
    open_cli_journal,
    who,
)
from letitloop.operate import doubt_json, doubts, resolve_effect


@click.group()
def effects() -> None:
    """Find and resolve side effects in doubt."""


@effects.command("list")
@click.argument("run", required=False)
@json_option
@journal_option
def list_cmd(run: str | None, as_json: bool) -> None:
    """List side effects in doubt, across all runs or for one RUN, with how to resolve each.

    \b
    Example:
        lil effects list
        lil effects list pipeline.main:customer-42 --json
    """
    journal = open_cli_journal()
    run_id = journal.find_run(run) if run is not None else None
    found = doubts(journal, run_id)
    if as_json:
        out.emit_json([doubt_json(d) for d in found])
        return
    if not found:
        out.say(f"no side effect in doubt in {f'run {run_id}' if run_id else 'this journal'}")
        info = journal.get_run(run_id).run if run_id else None
        if info is not None and info.status == "running":
            out.say(
                f"({info.holder} is executing it right now: a block it is inside is not in doubt)"
            )
        return
    table = out.make_table(
        "run id", "pos", "marker", "try", "status", "why", "since", right=("pos", "try")
    )
    for d in found:
        table.add_row(
            out.text(d.run_id),
            str(d.position),
            out.text(d.marker, "bold"),
            str(d.attempt),
            out.status_text(d.status),
            out.text(out.one_line(d.why, 60)),
            out.ago(d.started),
        )
    out.say(table)
    out.say(
        out.text(
            "Each block may or may not have had its effect. Check, then resolve it: --done skips "
            "the block on the next call, --redo runs it again:"
        )
    )
    for d in found:
        out.say(out.text(f"  {d.command('done')}    # or --redo", "cyan"))


@effects.command("resolve")
@click.argument("run")
@click.argument("marker")
@click.option("--done", "resolution", flag_value="done", help="It happened: skip the block.")
@click.option("--redo", "resolution", flag_value="redo", help="It did not: run the block again.")
@click.option("--by", metavar="NAME", help="Who decided (default: user@host).")
@click.option("-m", "--comment", metavar="TEXT", help="Why: kept in the journal with the decision.")
@json_option
@journal_option
def resolve_cmd(
    run: str,
    marker: str,
    resolution: str | None,
    by: str | None,
    comment: str | None,
    as_json: bool,
) -> None:
    """Decide an in-doubt side effect so its run can continue.

    MARKER is the marker's name, or its position as shown by `lil effects list`.

    \b
    Example:
        lil effects resolve pipeline.main:customer-42 send_email --done
    """
    if resolution is None:
        raise click.UsageError("say what happened: pass --done (skip the block) or --redo")
    journal = open_cli_journal()
    run_id = journal.find_run(run)
    done = resolve_effect(
        journal, run_id, marker_ref(marker), resolution, by=by or who(), comment=comment
    )
    if as_json:
        out.emit_json(done.to_json())
        return
    out.say(out.text(done.message, "bold"))
