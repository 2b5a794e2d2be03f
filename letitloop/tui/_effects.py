"""The effects-in-doubt screen: ``atomic_marker`` blocks that started and never recorded their end.

It lists exactly what ``operate.doubts`` finds (the one rule every surface shows), and for each
a person says whether the side effect happened (``d``: done, it will not run again) or not
(``r``: redo, it runs again when the run resumes), through ``operate.resolve_effect``. Resolving
is journaled with who did it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Header, Static

from letitloop import operate as ops
from letitloop.journal import who
from letitloop.operate import Doubt
from letitloop.tui._model import JournalChanged
from letitloop.tui._plain import PlainStatic
from letitloop.tui._widgets import ConfirmScreen, RowTable, TableScreen

EFFECT_COLUMNS = (
    ("run", "run id"),
    ("run_status", "run status"),
    ("pos", "#"),
    ("marker", "marker"),
    ("attempt", "try"),
    ("started", "started"),
    ("why", "why in doubt"),
)
# Events that can change what is in doubt. A process that dies inside a block leaves no event
# (the owner only notices the closed connection), so the screen also reads again when shown.
# The runs screen posts "interrupted" when a full read finds a run whose process died.
_KINDS = {"run", "fail", "resolve", "reset", "done", "interrupted"}


def resolve_question(row: Doubt, resolution: str) -> str:
    """What pressing d or r will do, said before it is done."""
    what = f"{row.marker} (position {row.position} of {row.run_id})"
    if resolution == "done":
        return (
            f"Mark {what} as done?\nSay this only if the side effect really happened: it will "
            "never run again, and the run continues after it when resumed. This cannot be undone."
        )
    return (
        f"Mark {what} for redo?\nSay this only if the side effect did not happen: it runs again "
        "when the run is resumed, so a side effect that did happen happens twice. This cannot be "
        "undone."
    )


class EffectsScreen(TableScreen):
    """Side effects in doubt across all runs."""

    table_id, screen_title = "effects", "effects in doubt"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "resolve('done')", "Done (it happened)"),
        Binding("r", "resolve('redo')", "Redo (run it again)"),
        Binding("enter", "open", "Open run"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Doubt] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield PlainStatic("Looking for side effects in doubt…", id="effects-help")
        yield RowTable(id="effects", columns=EFFECT_COLUMNS)
        yield Footer()

    def fetch(self) -> list[Doubt]:
        return self.model.effects()

    def show(self, data: list[Doubt]) -> None:
        self.rows = data
        clock = self.model.clock
        self.refill(
            (
                (
                    r.run_id,
                    r.run_status,
                    str(r.position),
                    r.marker,
                    str(r.attempt),
                    clock.time(r.started),
                    Text(r.why, "yellow"),
                ),
                f"{r.run_id}#{r.position}",
            )
            for r in data
        )
        help_text = (
            "No side effect is in doubt."
            if not data
            else f"{len(data)} side effect(s) in doubt. Check the outside world, then press d if "
            "it happened or r to run it again on resume."
        )
        self.query_one("#effects-help", Static).update(help_text)

    reload_delay = 1.0  # a scan reads every unfinished run's events

    def wants(self, message: JournalChanged) -> bool:
        return any(
            e.kind in _KINDS or (e.kind == "err" and e.data.get("kind") == "marker")
            for e in message.events
        )

    def on_screen_resume(self) -> None:
        if self.loaded:  # shown again: a process may have died inside a block meanwhile
            self.reload()

    def selected(self) -> Doubt | None:
        return self.under_cursor(self.rows)

    def action_resolve(self, resolution: str) -> None:
        row = self.selected()
        if row is None:
            return

        def done(comment: str | None) -> None:
            if comment is not None:  # confirmed; the comment is journaled with the decision
                self.run_write(
                    ops.resolve_effect,
                    row.run_id,
                    row.position,
                    resolution,
                    by=who(),
                    comment=comment or None,
                )

        self.app.push_screen(ConfirmScreen(resolve_question(row, resolution)), done)

    def action_open(self) -> None:
        row = self.selected()
        if row is not None:
            self.lil.open_run(row.run_id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()
