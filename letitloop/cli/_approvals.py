"""``lil approvals``: see and decide the approvals runs are waiting for."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import HUGE, LilError, journal_option, json_option, open_cli_journal, who
from letitloop.journal import match_approval
from letitloop.operate import approval_json, decide_approval

if TYPE_CHECKING:
    from letitloop.journal import ApprovalInfo

STATUSES = ("pending", "approved", "rejected", "cancelled")


@click.group()
def approvals() -> None:
    """See and decide the approvals runs are waiting for."""


@approvals.command("list")
@click.option("--status", type=click.Choice(STATUSES), help="Only approvals with this status.")
@click.option("--all", "show_all", is_flag=True, help="Decided and cancelled ones too.")
@click.option("--run", metavar="RUN", help="Only the approvals of this run.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@journal_option
def list_cmd(
    status: str | None, show_all: bool, run: str | None, limit: int, as_json: bool
) -> None:
    """List approvals, newest first: pending ones unless --all or --status is given.

    \b
    Example:
        lil approvals list --all --limit 20
    """
    journal = open_cli_journal()
    run_id = journal.find_run(run) if run else None
    wanted = status or (None if show_all else "pending")
    rows = journal.approvals(status=wanted, run_id=run_id, limit=limit)
    if as_json:
        out.emit_json([approval_json(r) for r in rows])
        return
    if not rows:
        out.say(f"no {wanted or ''} approvals".replace("  ", " "))
        return
    decided = any(r.decided_by for r in rows)
    columns = ["id", "name", "status", "run", "asked", "deadline"] + ["decided"] * decided
    table = out.make_table(*columns, "payload")
    for r in rows:  # times local and human: "2026-12-01 21:04:30 (5m ago)"
        who = [f"{r.decided_by} {out.stamp(r.decided_at)}" if r.decided_by else "-"] * decided
        table.add_row(
            r.id,
            r.name,
            out.status_text(_status(r)),
            r.run_id,
            out.stamp(r.created),
            _deadline(r),
            *who,
            _short(r.payload),
        )
    out.say(table)


@approvals.command("show")
@click.argument("approval_id", metavar="ID")
@json_option
@journal_option
def show_cmd(approval_id: str, as_json: bool) -> None:
    """Show one approval: its payload, schema, deadline and decision.

    \b
    Example:
        lil approvals show 3fa9c1d2
    """
    row = _find(approval_id)
    if as_json:
        out.emit_json(approval_json(row))
        return
    lines: list[str] = [
        f"approval {row.id}: {row.name!r}",
        f"run        {row.run_id} (position {row.position})",
        f"status     {_status(row)}",
        f"asked      {out.stamp(row.created)}",
        f"deadline   {_deadline(row)} (on timeout: {row.on_timeout})",
    ]
    if row.decided_by:
        how = " (timed out)" if row.timed_out else ""
        lines.append(f"decided    by {row.decided_by} {out.stamp(row.decided_at)}{how}")
    if row.comment:
        lines.append(f"comment    {row.comment}")
    lines += ["payload", json.dumps(row.payload, indent=2, ensure_ascii=False)]
    if row.edited is not None:
        lines += ["edited payload", json.dumps(row.edited, indent=2, ensure_ascii=False)]
    if row.schema is not None:
        lines += ["schema (an edited payload must satisfy it)", json.dumps(row.schema, indent=2)]
    out.say(out.text(lines[0], "bold"), *(out.text(line) for line in lines[1:]), sep="\n")


def _decide_options(fn: Any) -> Any:
    fn = click.option("--comment", "-m", metavar="TEXT", help="Why; kept with the decision.")(fn)
    fn = click.option("--by", metavar="NAME", help="Who decides (default: user@host).")(fn)
    return fn


@approvals.command("approve")
@click.argument("approval_id", metavar="ID")
@_decide_options
@click.option(
    "--payload",
    metavar="JSON",
    help="Approve an edited payload (JSON text, or @file.json); checked against the schema.",
)
@json_option
@journal_option
def approve_cmd(
    approval_id: str, comment: str | None, by: str | None, payload: str | None, as_json: bool
) -> None:
    """Approve; the waiting run continues at once (or when it is called again).

    \b
    Example:
        lil approvals approve 3fa9c1d2 -m "looks good" --payload '{"title": "Hi"}'
    """
    edited = _parse_payload(payload) if payload is not None else None
    _decide(approval_id, True, comment, by, edited, as_json)


@approvals.command("reject")
@click.argument("approval_id", metavar="ID")
@_decide_options
@json_option
@journal_option
def reject_cmd(approval_id: str, comment: str | None, by: str | None, as_json: bool) -> None:
    """Reject; the waiting run continues with ``decision.approved == False``.

    \b
    Example:
        lil approvals reject 3fa9c1d2 -m "wrong audience"
    """
    _decide(approval_id, False, comment, by, None, as_json)


def _decide(
    approval_id: str,
    approved: bool,
    comment: str | None,
    by: str | None,
    payload: Any,
    as_json: bool,
) -> None:
    journal = open_cli_journal()
    done = decide_approval(
        journal, approval_id, approved=approved, by=by or who(), comment=comment, payload=payload
    )
    row = match_approval(
        done.data["approval_id"], journal.approvals(run_id=done.run_id, limit=HUGE)
    )
    if as_json:
        out.emit_json(approval_json(row))
        return
    verb = "approved" if approved else "rejected"
    out.say(
        out.text(f"{verb} {row.id} ({row.name!r} of {row.run_id})", "bold"),
        out.text(
            "a process waiting on it continues now; a suspended run continues when called again "
            f"(`lil runs resume {row.run_id}`)"
        ),
        sep="\n",
    )


def _find(approval_id: str) -> ApprovalInfo:
    return match_approval(approval_id, open_cli_journal().approvals(limit=HUGE))


def _parse_payload(text: str) -> Any:
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise LilError(
                f"cannot read {text[1:]}: {exc}", fix="give a readable JSON file"
            ) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise LilError(
            "--payload is nested too deeply to read",
            fix="send a flatter JSON payload (at most a few hundred levels)",
        ) from None
    except ValueError as exc:
        raise LilError(
            f"--payload is not valid JSON: {exc}",
            fix='quote it for the shell: --payload \'{"title": "Hello"}\'',
        ) from None


def _status(row: ApprovalInfo) -> str:
    expired = row.deadline is not None and row.deadline < time.time()
    return "expired" if row.status == "pending" and expired else row.status


def _deadline(row: ApprovalInfo) -> str:
    if row.deadline is None:
        return "none"
    from letitloop.operate import local_time

    left = row.deadline - time.time()
    when = local_time(row.deadline)
    return f"{when} (in {out.duration(left)})" if left > 0 else f"{when} (passed)"


def _short(payload: Any) -> str:
    return out.one_line(json.dumps(payload, ensure_ascii=False))
