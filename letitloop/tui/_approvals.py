"""The approvals inbox: pending ``approval()`` requests across runs, with their payload.

``a`` approves, ``r`` rejects (each asks for an optional comment), ``e`` edits the payload as JSON
and approves it, for requests that declared a schema. The first decision wins: a request decided
elsewhere meanwhile shows an error here and leaves the inbox. A run that waits in its process
(``wait=True``) continues by itself; a suspended one continues when resumed (``R``).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static
from textual.widgets.data_table import ColumnKey

from letitloop import operate as ops
from letitloop.journal import ApprovalInfo, who
from letitloop.tui._model import MAX_SHOWN
from letitloop.tui._plain import PlainStatic
from letitloop.tui._widgets import PayloadScreen, PromptScreen, RowTable, TableScreen

# (key, label, width): the run id takes what the others leave of the table's width, cut in
# the middle (workflow name and the key's last characters stay readable).
APPROVAL_COLUMNS = (
    ("name", "approval", 14),
    ("run", "run", None),
    ("created", "asked", 11),
    ("deadline", "deadline", 11),
    ("edit", "edit", 4),
)
CELL_PADDING = 2  # a DataTable pads each cell by one column on either side
MIN_RUN_WIDTH = 12


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the middle replaced by an ellipsis."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2 + (width - 1) % 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def fit_run(run_id: str, width: int) -> str:
    """A run id cut to ``width``: the workflow name whole when it leaves room for part of the
    key, and the key cut in the middle (``blog.edit:9d6…4d3``)."""
    workflow, sep, key = run_id.rpartition(":")
    if len(run_id) <= width or not sep or len(workflow) + 1 + 5 > width:
        return fit(run_id, width)
    return workflow + sep + fit(key, width - len(workflow) - 1)


def run_width(table_width: int) -> int:
    fixed = sum(w for _, _, w in APPROVAL_COLUMNS if w is not None)
    padding = CELL_PADDING * len(APPROVAL_COLUMNS)
    return max(MIN_RUN_WIDTH, table_width - fixed - padding - 1)  # 1: the scrollbar's gutter


def payload_text(payload: Any) -> str:
    try:
        return json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(payload)


def check_payload(text: str, schema: dict[str, Any] | None) -> Any:
    """Parse an edited payload and check it against the approval's schema: the check the journal
    makes when the decision is recorded, run before the dialog closes."""
    from letitloop.errors import ConfigError
    from letitloop.journal import check_payload as check_schema

    value = json.loads(text)
    try:
        check_schema(schema, value, "the payload")
    except ConfigError as exc:
        raise ValueError(exc.message) from None
    return value


class ApprovalsScreen(TableScreen):
    """Every pending approval, oldest first."""

    table_id, screen_title = "approvals", "approvals"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "decide(True)", "Approve"),
        Binding("r", "decide(False)", "Reject"),
        Binding("e", "edit", "Edit payload"),
        Binding("R", "resume", "Resume run"),
        Binding("enter", "open", "Open run"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[ApprovalInfo] = []
        self._width = 0  # the table width the rows were cut for

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="approvals-main"):
            columns = [
                (key, label, width or MIN_RUN_WIDTH) for key, label, width in APPROVAL_COLUMNS
            ]
            yield RowTable(id="approvals", columns=columns)
            with VerticalScroll(id="payload-pane"):
                yield PlainStatic("", id="payload")
        yield Footer()

    def fetch(self) -> list[ApprovalInfo]:
        return self.model.approvals()

    def show(self, data: list[ApprovalInfo]) -> None:
        self.rows = data
        table = self.query_one("#approvals", DataTable)
        width = run_width(table.size.width or self.app.size.width // 2)
        table.columns[ColumnKey("run")].width = width
        self._width = table.size.width
        clock = self.model.clock
        self.refill(
            (
                (
                    fit(r.name, 14),
                    fit_run(r.run_id, width),
                    clock.time(r.created),
                    clock.time(r.deadline) if r.deadline else "none",
                    "yes" if r.schema is not None else "no",
                ),
                r.id,
            )
            for r in data
        )
        self.show_payload()

    def on_resize(self) -> None:
        if self.rows and self.query_one("#approvals", DataTable).size.width != self._width:
            self.show(self.rows)

    def selected(self) -> ApprovalInfo | None:
        return self.under_cursor(self.rows)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_payload()

    def show_payload(self) -> None:
        pane = self.query_one("#payload", Static)
        r = self.selected()
        if r is None:
            pane.update(Text("No approval is pending.", "dim"))
            return
        parts: list[Any] = [
            Text(f"{r.name}  ({r.id})", "bold"),
            Text(f"run {r.run_id}"),
            Text("\npayload", "bold"),
            Syntax(ops.truncate(payload_text(r.payload), MAX_SHOWN), "json", word_wrap=True),
        ]
        if r.schema:
            parts += [Text("\nschema (press e to edit)", "bold")]
            schema = ops.truncate(payload_text(r.schema), 1500)
            parts.append(Syntax(schema, "json", word_wrap=True))
        pane.update(Group(*parts))

    def action_decide(self, approved: bool) -> None:
        r = self.selected()
        if r is None:
            return

        def done(comment: str | None) -> None:
            if comment is not None:
                self.run_write(
                    ops.decide_approval, r.id, approved=approved, by=who(), comment=comment
                )

        verb = "Approve" if approved else "Reject"
        title = f"{verb} {r.name} of {r.run_id}? Comment (optional), Enter to confirm:"
        self.app.push_screen(PromptScreen(title), done)

    def action_edit(self) -> None:
        r = self.selected()
        if r is None:
            return
        if r.schema is None:
            text = f"{r.name} declared no schema: its payload cannot be edited"
            self.notify(text, severity="warning")
            return

        def done(text: str | None) -> None:
            if text is not None:
                payload = check_payload(text, r.schema)
                self.run_write(ops.decide_approval, r.id, approved=True, by=who(), payload=payload)

        check = lambda text: check_payload(text, r.schema)  # noqa: E731
        self.app.push_screen(
            PayloadScreen(f"Edit the payload of {r.name}", payload_text(r.payload), check), done
        )

    def action_resume(self) -> None:
        r = self.selected()
        if r is not None:
            self.lil.start_resume(r.run_id)

    def action_open(self) -> None:
        r = self.selected()
        if r is not None:
            self.lil.open_run(r.run_id)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()
