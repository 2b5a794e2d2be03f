"""The splices screen: code changes agents proposed, with a highlighted diff, to apply or reject.

Applying goes through ``letitloop.splice`` (the target must be unchanged since the proposal, or
the proposal is journaled as a conflict and both versions are shown). Rejecting keeps a comment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from letitloop import operate as ops
from letitloop.journal import Proposal, who
from letitloop.tui._model import JournalChanged
from letitloop.tui._plain import PlainStatic
from letitloop.tui._widgets import (
    ConfirmScreen,
    PromptScreen,
    RowTable,
    TableScreen,
    status_text,
)

SPLICE_COLUMNS = (
    ("id", "id"),
    ("state", "state"),
    ("target", "target"),
    ("file", "file"),
    ("by", "proposed by"),
    ("created", "when"),
)


def unified_diff(old: str, new: str, name: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{name} (current)",
        tofile=f"{name} (proposed)",
    )
    return "".join(lines) or "(no change)"


def shown_path(path: str) -> str:
    """A path relative to the current directory when it is inside it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


class SplicesScreen(TableScreen):
    """Pending splice proposals (and those found in conflict)."""

    table_id, screen_title = "splices", "splice proposals"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "apply", "Apply"),
        Binding("r", "reject", "Reject"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.proposals: list[Proposal] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="splices-main"):
            yield RowTable(id="splices", columns=SPLICE_COLUMNS)
            with VerticalScroll(id="diff-pane"):
                yield PlainStatic("", id="diff")
        yield Footer()

    def fetch(self) -> list[Proposal]:
        return self.model.proposals()

    def show(self, data: list[Proposal]) -> None:
        self.proposals = data
        clock = self.model.clock
        self.refill(
            (
                (
                    p.id,
                    status_text(p.state),
                    p.target,
                    shown_path(p.path),
                    p.by.split("@", 1)[0],
                    clock.time(p.created),
                ),
                p.id,
            )
            for p in data
        )
        self.show_diff()

    def wants(self, message: JournalChanged) -> bool:
        return any(e.kind in ("propose", "decide") for e in message.events) or not message.run_ids

    def selected(self) -> Proposal | None:
        return self.under_cursor(self.proposals)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_diff()

    def show_diff(self) -> None:
        pane = self.query_one("#diff", Static)
        p = self.selected()
        if p is None:
            pane.update(Text("No splice proposal is waiting.", "dim"))
            return
        parts: list[Any] = [
            Text(f"{p.target} in {shown_path(p.path)}", "bold"),
            Text(f"reason: {p.reason or '(none given)'}"),
        ]
        if p.origin:
            parts.append(Text(f"proposed by run {p.origin}"))
        if p.state == "conflict":
            parts.append(
                Text(
                    "CONFLICT: the target changed since it was proposed; nothing was written. "
                    "Its current source is compared with the proposal below.",
                    "bold red",
                )
            )
            diff = unified_diff(p.note or "", p.code, p.target)
        else:
            diff = unified_diff(p.old, p.code, p.target)
        parts.append(Syntax(diff, "diff", word_wrap=True))
        pane.update(Group(*parts))

    def action_apply(self) -> None:
        p = self.selected()
        if p is None:
            return

        def done(comment: str | None) -> None:
            if comment is not None:
                self.run_write(ops.apply_splice, p.id, by=who(), comment=comment)

        question = (
            f"Apply {p.id}: replace {p.target} in {shown_path(p.path)}?\n"
            "The file is rewritten on disk now (only if the target is unchanged since it was "
            "proposed); the journal keeps who applied it and your comment."
        )
        self.app.push_screen(ConfirmScreen(question), done)

    def action_reject(self) -> None:
        p = self.selected()
        if p is None:
            return

        def done(comment: str | None) -> None:
            if comment is not None:
                self.run_write(ops.reject_splice, p.id, by=who(), comment=comment)

        self.app.push_screen(PromptScreen(f"Reject {p.id} ({p.target})? Comment:"), done)
