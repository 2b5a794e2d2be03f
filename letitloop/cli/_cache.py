"""``lil cache``: the response cache that ``step(..., cache=True)`` fills and reads."""

from __future__ import annotations

import time

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import journal_option, json_option, open_cli_journal


@click.group()
def cache() -> None:
    """List and clear cached step outputs."""


@cache.command("list")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
@journal_option
def list_cmd(limit: int, as_json: bool) -> None:
    """Cached outputs, newest first: function, age, expiry, size, what computing it cost.

    \b
    Example:
        lil cache list --limit 20
    """
    entries = open_cli_journal().cache_list(limit)
    if as_json:
        out.emit_json(entries)
        return
    table = out.make_table("function", "cached", "expires", "size", "cost", "key", right=("size",))
    now = time.time()
    for e in entries:
        expires = "never" if e.expires is None else f"in {e.expires - now:,.0f} s"
        if e.expires is not None and e.expires <= now:
            expires = "expired"
        table.add_row(
            e.fn,
            out.ago(e.created),
            expires,
            out.size(e.size),
            out.money(e.cost_micros),
            e.key[:12],
        )
    out.say(table)


@cache.command("clear")
@click.option("--fn", metavar="MODULE.QUALNAME", help="Only the outputs of this function.")
@json_option
@journal_option
def clear_cmd(fn: str | None, as_json: bool) -> None:
    """Drop cached outputs (all, or one function's); the next calls compute them again.

    \b
    Example:
        lil cache clear --fn myapp.llm.summarize
    """
    journal = open_cli_journal()
    count = sum(1 for e in journal.cache_list(1 << 30) if fn in (None, e.fn))
    journal.cache_clear(fn)
    if as_json:
        out.emit_json({"cleared": count, "fn": fn})
        return
    out.say(out.text(f"cleared {count} cached output(s)" + (f" of {fn}" if fn else "")))
