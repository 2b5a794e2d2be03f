"""Output for people (rich tables, plain when stdout is not a terminal) and for scripts (JSON).

rich is imported on first use, not when the CLI starts.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import click

from letitloop.operate import (  # the one formatting of every surface
    ago as ago,
    duration as duration,
    error_line as error_line,
    local_time,
    money as money,
    one_line as one_line,
    size as size,
)

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

STATUS_STYLE = {
    "completed": "green",
    "failed": "red",
    "running": "cyan",
    "interrupted": "yellow",
    "reset": "magenta",
    "started": "yellow",
    "suspended": "blue",
    "pending": "yellow",
    "expired": "red",
    "approved": "green",
    "rejected": "red",
    "cancelled": "magenta",
}


@lru_cache(maxsize=2)
def _console_for(tty: bool) -> Console:
    from rich.console import Console

    # Not a terminal: no colour, and wide enough that run ids are never cut or wrapped.
    return Console(highlight=False, emoji=False, width=None if tty else 240, soft_wrap=not tty)


def console() -> Console:
    """The console for stdout (rich writes to whatever ``sys.stdout`` is at print time)."""
    return _console_for(is_tty())


def is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def say(*parts: Any, style: str | None = None, sep: str = " ") -> None:
    """Print rich renderables or markup text to stdout (plain, right-trimmed when piped)."""
    con = console()
    if is_tty():
        con.print(*parts, style=style, sep=sep)
        return
    with con.capture() as captured:
        con.print(*parts, style=style, sep=sep)
    lines = captured.get().splitlines()
    click.echo("\n".join(line.rstrip() for line in lines))


def text(value: object, style: str | None = None) -> Any:
    """User content as a rich Text (never parsed as markup)."""
    from rich.text import Text

    return Text("" if value is None else str(value), style=style or "")


def status_text(status: str | None) -> Any:
    return text(status or "-", STATUS_STYLE.get(status or "", ""))


def notice_state(state: str) -> Any:
    """A notification's delivery state, in its own words (pending, delivered, failed)."""
    return text(state, {"delivered": "green", "pending": "yellow"}.get(state, "red"))


def make_table(
    *columns: str,
    title: str | None = None,
    right: Iterable[str] = (),
    keep: Iterable[str] = ("run id", "workflow", "name", "marker", "status", "updated", "since"),
) -> Table:
    """A table with these column headers; columns named in ``right`` are right-aligned, those
    in ``keep`` are never wrapped (the others give way on a narrow terminal)."""
    from rich import box
    from rich.table import Table

    table = Table(
        title=title,
        box=box.SIMPLE_HEAD if is_tty() else None,
        show_edge=False,
        pad_edge=False,
        collapse_padding=is_tty(),
        title_justify="left",
        header_style="bold",
    )
    right, keep = set(right), set(keep)
    for name in columns:
        table.add_column(
            name,
            justify="right" if name in right else "left",
            overflow="fold",
            no_wrap=name in keep,
        )
    return table


def emit_json(obj: Any) -> None:
    """JSON on stdout: records become objects, bytes become base64 strings."""
    click.echo(json.dumps(_records(obj), indent=2, default=_json_default, ensure_ascii=False))


def _records(value: Any) -> Any:
    """NamedTuple records (the journal contract's) as objects; json would write them as lists."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _records(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [_records(v) for v in value]
    if isinstance(value, dict):
        return {k: _records(v) for k, v in value.items()}
    return value


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def stamp(ts: float | None) -> str:
    """An absolute local time with its relative form: ``2025-01-31 12:00:03 (5m ago)``."""
    return local_time(ts, relative=True)


def kv_table(rows: Sequence[tuple[str, Any]]) -> Table:
    """Aligned ``key  value`` lines (values may be rich renderables)."""
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value if not isinstance(value, str) else text(value))
    return table


def check_mark(ok: bool) -> Any:
    return text("✓", "green") if ok else text("✗", "bold red")


def stderr_write(message: str) -> None:
    sys.stderr.write(message + "\n")
