"""Journal text shown exactly as written: never parsed as Textual or Rich markup.

Textual reads a ``str`` as markup almost everywhere (a label, a table cell, a notification, a
command palette hit), and run ids, step names, errors, approval names, marker names and splice
reasons come from the journal: a run id ``evil[/]run`` stopped the dashboard with
``MarkupError``, ``[bold]`` and ``[link=…]`` in a step name changed what it looked like, and
``[@click=app.quit]`` made it a button. Every screen of lil-tui builds its text with what is
here, so a new screen gets plain text by default: ``plain`` for a renderable, ``PlainLabel`` and
``PlainStatic`` for widgets whose ``str`` content is plain, ``PlainTable`` for tables whose
``str`` cells are plain, ``PlainNotify`` for notifications, and ``escaped`` for the few Textual
arguments that take nothing but markup.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import App
from textual.markup import escape
from textual.notifications import SeverityLevel
from textual.widgets import DataTable, Label, Static
from textual.widgets.data_table import ColumnKey, RowKey

__all__ = ["PlainLabel", "PlainNotify", "PlainStatic", "PlainTable", "cell", "escaped", "plain"]


def plain(value: object, style: str = "") -> Text:
    """``value`` as text that is shown as written, in ``style``."""
    return Text(str(value), style=style)


def cell(value: object, style: str = "") -> Text:
    """A table cell shown as written, on one line (a plain ``str`` cell is also parsed for
    markup each time the table measures it)."""
    return Text(str(value), style=style, no_wrap=True, end="")


def escaped(value: object) -> str:
    """``value`` as Textual markup that shows it as written: only for arguments that take
    nothing else (a command palette hit's help)."""
    return escape(str(value))


class PlainLabel(Label):
    """A label whose ``str`` content, given or updated, is shown as written."""

    def __init__(self, content: Any = "", **kwargs: Any) -> None:
        super().__init__(content, markup=False, **kwargs)


class PlainStatic(Static):
    """A static whose ``str`` content, given or updated, is shown as written."""

    def __init__(self, content: Any = "", **kwargs: Any) -> None:
        super().__init__(content, markup=False, **kwargs)


class PlainTable(DataTable[Any]):
    """A table whose ``str`` cells are shown as written (``DataTable`` parses them as markup)."""

    def add_row(
        self,
        *cells: Any,
        height: int | None = 1,
        key: str | None = None,
        label: Any = None,
    ) -> RowKey:
        return super().add_row(
            *(cell(c) if isinstance(c, str) else c for c in cells),
            height=height,
            key=key,
            label=cell(label) if isinstance(label, str) else label,
        )

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: Any,
        *,
        update_width: bool = False,
    ) -> None:
        value = cell(value) if isinstance(value, str) else value
        super().update_cell(row_key, column_key, value, update_width=update_width)


def column_table(table_id: str, *columns: str) -> PlainTable:
    """A row-cursor table with ``columns``, each keyed by its own title (the analytics and
    queues screens' panes)."""
    table = PlainTable(id=table_id, cursor_type="row", zebra_stripes=True)
    for name in columns:
        table.add_column(name, key=name)
    return table


class PlainNotify(App[None]):
    """An app whose notifications are shown as written: every message lil-tui notifies names
    runs, steps or errors from the journal (``Widget.notify`` asks for markup by default)."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)
