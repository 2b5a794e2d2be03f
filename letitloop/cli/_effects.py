"""``lil effects``: side effects in doubt (``atomic_marker`` blocks that never completed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import (
    HUGE,
    LilError,
    journal_option,
    json_option,
    marker_ref,
    open_cli_journal,
    who,
)

if TYPE_CHECKING:
    from letitloop.journal._contract import AttemptInfo, RunDetail


@click.group()
def effects() -> None:
    """Find and resolve side effects in doubt."""


def in_doubt(detail: RunDetail) -> list[AttemptInfo]:
    """Markers whose latest attempt started (or raised) and that nobody resolved yet.

    A completed run is never replayed, and a run executing right now may simply be inside the
    block, so neither has markers in doubt.
    """
    if detail.run.status in ("completed", "running"):
        return []
    latest: dict[int, AttemptInfo] = {}
    for a in detail.attempts:
        if a.kind == "marker" and (
            a.position not in latest or a.attempt > latest[a.position].attempt
        ):
            latest[a.position] = a
    return [
        a
        for a in sorted(latest.values(), key=lambda a: a.position)
        if a.status in ("started", "failed") and not a.resolution
    ]


def _doubt_row(detail: RunDetail, a: AttemptInfo) -> dict[str, Any]:
    names = [m.name for m in detail.attempts if m.kind == "marker" and m.position != a.position]
    ref = str(a.position) if a.name in names else a.name  # the name only if it is unambiguous
    base = f"lil effects resolve {detail.run.run_id} {ref}"
    return {
        "run_id": detail.run.run_id,
        "run_status": detail.run.status,
        "position": a.position,
        "marker": a.name,
        "attempt": a.attempt,
        "status": a.status,
        "started": a.started,
        "why": out.error_line(a.error) if a.error else "the process stopped inside the block",
        "error": a.error,
        "resolve": {"done": f"{base} --done", "redo": f"{base} --redo"},
    }


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
    if run is not None:
        run_ids = [journal.find_run(run)]
    else:
        run_ids = [
            r.run_id
            for r in journal.list_runs(limit=HUGE)
            if r.status not in ("completed", "running")
        ]
    rows: list[dict[str, Any]] = []
    for run_id in run_ids:
        detail = journal.get_run(run_id)
        rows.extend(_doubt_row(detail, a) for a in in_doubt(detail))
    if as_json:
        out.emit_json(rows)
        return
    if not rows:
        scope = f"run {run_ids[0]}" if run is not None else "this journal"
        out.say(f"no side effect in doubt in {scope}")
        if run is not None and detail.run.status == "running":
            out.say(
                f"({detail.run.holder} is executing it right now: a block it is inside is "
                "not in doubt)"
            )
        return
    table = out.make_table(
        "run id", "pos", "marker", "try", "status", "why", "since", right=("pos", "try")
    )
    for row in rows:
        table.add_row(
            out.text(row["run_id"]),
            str(row["position"]),
            out.text(row["marker"], "bold"),
            str(row["attempt"]),
            out.status_text(row["status"]),
            out.text(out.one_line(row["why"], 60)),
            out.ago(row["started"]),
        )
    out.say(table)
    out.say(
        out.text(
            "Each block may or may not have had its effect. Check, then resolve it: --done skips "
            "the block on the next call, --redo runs it again:"
        )
    )
    for row in rows:
        out.say(out.text(f"  {row['resolve']['done']}    # or --redo", "cyan"))


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
    by = by or who()
    journal.resolve_marker(run_id, marker_ref(marker), resolution, by, comment)
    ref = marker_ref(marker)
    resolved = [
        a
        for a in journal.get_run(run_id).attempts
        if a.kind == "marker" and ref in (a.name, a.position) and a.resolution == resolution
    ]
    if not resolved:
        raise LilError(f"the journal does not show marker {marker!r} of run {run_id} as resolved")
    a = resolved[-1]
    if as_json:
        out.emit_json(
            {
                "run_id": run_id,
                "marker": a.name,
                "position": a.position,
                "attempt": a.attempt,
                "resolution": resolution,
                "by": a.resolved_by,
            }
        )
        return
    effect = "skips the block" if resolution == "done" else "runs the block again"
    out.say(
        out.text(
            f"resolved {a.name!r} (position {a.position}) of {run_id} as {resolution}", "bold"
        ),
        out.text(f"by {a.resolved_by}: the next call of the workflow {effect} and continues"),
    )
