"""``lil notify`` and ``lil limits``: the notification outbox and the shared rate limits.

``lil notify list`` shows what was (or could not be) delivered, ``lil notify retry KEY`` sends a
failed notification again, and ``lil limits`` shows each shared limit's bucket now.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import journal_option, json_option, open_cli_journal
from letitloop.operate import notice_json


@click.group()
def notify() -> None:
    """See the notification outbox and retry failed webhooks."""


@notify.command("list")
@click.option(
    "--state", type=click.Choice(["pending", "delivered", "failed"]), help="Only this state."
)
@click.option("--limit", default=50, show_default=True, help="How many, newest first.")
@json_option
@journal_option
def list_cmd(state: str | None, limit: int, as_json: bool) -> None:
    """List notifications, newest first: event, run, state, tries and the last error.

    \b
    Example:
        lil notify list --state failed
    """
    notices = open_cli_journal().notifications(state=state, limit=limit)
    if as_json:
        out.emit_json([notice_json(n) for n in notices])
        return
    if not notices:
        out.say("no notifications" + (f" {state}" if state else ""))
        return
    table = out.make_table("key", "event", "run", "state", "tries", "when", "last error")
    for n in notices:
        when = n.delivered_at or n.created
        table.add_row(
            n.key,
            n.event,
            out.text(n.run_id),
            out.notice_state(n.state),
            str(n.tries),
            out.stamp(when),
            out.text(n.last_error or "-", "red" if n.state == "failed" else ""),
        )
    out.say(table)
    failed = sum(n.state == "failed" for n in notices)
    if failed:
        out.say(
            out.text(f"{failed} notification(s) could not be delivered", "red"),
            "- fix the receiver, then `lil notify retry KEY`",
        )


@notify.command("retry")
@click.argument("key")
@journal_option
def retry_cmd(key: str) -> None:
    """Deliver a failed notification again, with a fresh number of tries.

    \b
    Example:
        lil notify retry lil-n-3f2a...
    """
    open_cli_journal().retry_notification(key)
    out.say(f"notification {key} is pending again")


@click.command("limits")
@json_option
@journal_option
def limits_cmd(as_json: bool) -> None:
    """Show the shared rate limits in use and what is left of each.

    Each limit's requests and tokens left now, and any Retry-After block a 429 set.

    \b
    Example:
        lil limits
    """
    buckets = open_cli_journal().capacity()
    if as_json:
        out.emit_json(buckets)
        return
    if not buckets:
        out.say("no rate limit used since the journal's owner started")
        return
    table = out.make_table("limit", "rpm", "tpm", "requests left", "tokens left", "blocked")
    for b in buckets:
        blocked = f"{b['blocked_for']} s" if b["blocked_for"] else "-"
        table.add_row(
            str(b["name"]),
            str(b["rpm"] or "-"),
            str(b["tpm"] or "-"),
            str(b["requests"]),
            str(b["tokens"]),
            blocked,
        )
    out.say(table)


def check_notifications(path: Path) -> Any:
    """A doctor ``Check``: fails while notifications could not be delivered."""
    from letitloop.cli._doctor import Check, read_owner

    failed = read_owner(
        path, "notifications", lambda journal: journal.notifications(state="failed", limit=1000)
    )
    if isinstance(failed, Check):
        return failed
    if not failed:
        return Check("notifications", True, "no notification failed to be delivered")
    last = failed[0]
    return Check(
        "notifications",
        False,
        f"{len(failed)} notification(s) could not be delivered (last: {last.event} of run "
        f"{last.run_id}: {last.last_error})",
        "check the receiver (LIL_NOTIFY_URL or [tool.letitloop.notify] url), then "
        "`lil notify retry KEY` for each (`lil notify list --state failed`)",
    )


def last_wait(journal: Any, detail: Any) -> Any:
    """The newest ``wait`` event of a running run whose step has not finished since, or None."""
    if detail.run.status != "running":
        return None
    waits = [e for e in journal.events(run_id=detail.run.run_id, limit=20_000) if e.kind == "wait"]
    if not waits:
        return None
    wait = waits[-1]
    at = wait.data.get("at")
    done = any(a.position == at and a.status != "started" for a in detail.attempts)
    over = wait.ts + float(wait.data.get("seconds") or 0) < time.time() - 60
    return None if done or over else wait


def show_wait(journal: Any, detail: Any) -> None:
    wait = last_wait(journal, detail)
    if wait is not None:
        out.say("")
        out.say(
            out.text(f"waiting for capacity of limit {wait.data.get('limit')}", "cyan"),
            f"(step {wait.data.get('name')!r} at position {wait.data.get('at')}, "
            f"{float(wait.data.get('seconds') or 0):.1f} s from {out.stamp(wait.ts)}; "
            "`lil limits` shows the buckets)",
        )
