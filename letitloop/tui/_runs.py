"""The runs screen: every run in a live table that follows the owner's pushed events.

The table loads once; afterwards only the runs named in new events are fetched again (one
``get_run`` each, coalesced while a fetch is in flight), their cells updated in place, and a new
run rebuilds the table so the sort order holds. Filter by text (``/``) and status (``s``), sort
(``o`` or a click on a header), open a run (Enter), and act on it (resume, retry, budget, reset).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Label

from letitloop import operate as ops
from letitloop.journal import EventInfo, who
from letitloop.operate import RunSummary
from letitloop.tui._model import Clock, JournalChanged
from letitloop.tui._plain import PlainLabel, cell
from letitloop.tui._widgets import (
    ConfirmScreen,
    JournalScreen,
    PromptScreen,
    RowTable,
    status_text,
)

PAGE = 200  # runs added to the table at a time
# Changed runs are read in full once their events pause for FULL_READ_QUIET seconds, and at
# least every FULL_READ_MAX seconds while they keep coming: a full read of a run keeps the owner's
# database thread busy (about half a second on a journal of a million events), and pushed events
# wait behind it.
FULL_READ_QUIET = 1.0
FULL_READ_MAX = 5.0

RUN_COLUMNS = (
    ("workflow", "workflow"),
    ("run", "run id"),
    ("status", "status"),
    ("steps", "steps"),
    ("current", "current step"),
    ("started", "started"),
    ("duration", "duration"),
    ("cost", "cost"),
)
SORT_KEYS: dict[str, Callable[[RunSummary], Any]] = {
    "started": lambda r: r.created,
    "status": lambda r: (r.status, -r.created),
    "workflow": lambda r: (r.workflow, -r.created),
    "duration": lambda r: r.seconds or 0.0,
    "cost": lambda r: r.cost_micros,
}
# the statuses ``s`` steps through: the ones people look for first, then the rest
FIRST = ("running", "suspended", "failed")
STATUS_CYCLE = (*FIRST, *(s for s in ops.STATUSES if s not in FIRST))


def cells(r: RunSummary, clock: Clock) -> tuple[Text, ...]:
    """A run's row, its numbers as operate writes them (``shown``)."""
    shown = ops.shown(r)
    row = [r.workflow, r.run_id, r.status, shown["steps"], shown["current"]]
    row += [clock.time(r.created), clock.duration(r.seconds), shown["cost"]]
    out = [cell(v) for v in row]
    out[2] = status_text(r.status)
    return tuple(out)


def matches(r: RunSummary, status: str | None, text: str) -> bool:
    """Whether a run passes the filters (a status, and a text in its id or workflow)."""
    if status and r.status != status:
        return False
    text = text.strip().lower()
    return not text or text in r.run_id.lower() or text in r.workflow.lower()


RUN_BINDINGS = [
    Binding("R", "resume", "Resume"),
    Binding("t", "retry", "Retry dead letter"),
    Binding("b", "budget", "Budget"),
    Binding("x", "reset", "Reset"),
    Binding("c", "cancel", "Cancel"),
]


class RunActions:
    """Resume, cancel, retry, budget and reset of the run a screen has selected, each taken
    through ``letitloop.operate``."""

    def selected_run(self) -> RunSummary | None:
        raise NotImplementedError

    def applicable_run(self: Any, action: str) -> RunSummary | None:
        """The selected run if ``action`` applies to it as it stands now (``operate``'s
        ``actions``, the rule the lab's buttons follow too), else None, having said why."""
        row = self.selected_run()
        if row is None:
            return None
        now = self.lil.model.summary(row.run_id)
        if action not in now.actions:
            self.notify(ops.why_not(action, now), severity="warning")
            return None
        return row  # type: ignore[no-any-return]

    def action_resume(self: Any) -> None:
        """Resume in a new process; a run that cannot be resumed is refused with the cause
        ``lil runs resume`` gives (``operate.start_resume``)."""
        row = self.selected_run()
        if row is not None:
            self.lil.start_resume(row.run_id)

    def action_retry(self: Any) -> None:
        row = self.applicable_run("retry")
        if row is not None:
            self.run_write(ops.retry_dead_letter, row.run_id, by=who())

    def action_budget(self: Any) -> None:
        row = self.applicable_run("budget")
        if row is None:
            return

        def done(value: str | None) -> None:
            if not value:
                return
            try:
                dollars = float(value.strip().lstrip("$"))
            except ValueError:
                self.notify(f"{value!r} is not an amount in dollars", severity="error")
                return
            if dollars <= 0:
                self.notify("a budget must be more than $0", severity="error")
                return
            self.run_write(ops.raise_budget, row.run_id, by=who(), usd=dollars)

        spent = ops.money(row.cost_micros)
        question = f"New budget of {row.run_id} in USD (spent so far {spent})"
        self.app.push_screen(PromptScreen(question, placeholder="e.g. 5.00"), done)

    def action_cancel(self: Any) -> None:
        def cancel(row: RunSummary, comment: str) -> None:
            reason = comment or "cancelled from lil-tui"
            self.run_write(ops.cancel_run, row.run_id, by=who(), reason=reason)

        effect = (
            "A process executing it stops at its next step, and it is not resumed until it is "
            "reset. This cannot be undone."
        )
        self.confirm_run("cancel", effect, cancel)

    def action_reset(self: Any) -> None:
        def reset(row: RunSummary, comment: str) -> None:
            self.run_write(ops.reset_run, row.run_id, by=who(), comment=comment or None)

        effect = (
            "The next call runs every step again, side effects included; the history stays in "
            "the journal. This cannot be undone."
        )
        self.confirm_run("reset", effect, reset)

    def confirm_run(
        self: Any, action: str, effect: str, write: Callable[[RunSummary, str], None]
    ) -> None:
        """Ask "Cancel RUN (status, steps)?" and what ``effect`` follows, with an optional
        comment, about the selected run if ``action`` applies to it; ``write`` it on yes."""
        row = self.applicable_run(action)
        if row is None:
            return

        def done(comment: str | None) -> None:
            if comment is not None:
                write(row, comment)

        steps = ops.shown(row)["steps"]
        question = f"{action.capitalize()} {row.run_id} ({row.status}, {steps} steps)?\n{effect}"
        self.app.push_screen(ConfirmScreen(question), done)


class RunsScreen(RunActions, JournalScreen):
    """All runs, newest first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("slash", "filter", "Filter"),
        Binding("s", "status", "Status"),
        Binding("o", "sort", "Sort"),
        *RUN_BINDINGS,
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, RunSummary] = {}
        self.status_filter: str | None = None
        self.text_filter = ""
        self.sort_key = "started"
        self.sort_reverse = True
        self._dirty: set[str] = set()
        self._touched: dict[str, int] = {}  # run -> seq of its latest event seen
        self._fetching = False
        self._full_read: Timer | None = None
        self._first_dirty = 0.0
        self.window = PAGE  # how many matching runs the table holds
        self.complete = False  # whether every run has been read yet
        self.matching = 0

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="runs-bar"):
            yield Input(placeholder="filter by run id or workflow  (/)", id="filter")
            yield PlainLabel("", id="runs-state")
        yield RowTable(id="runs", columns=RUN_COLUMNS)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#runs", DataTable).focus()
        super().on_mount()

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#runs", DataTable)

    # data -------------------------------------------------------------------------------------

    def fetch(self) -> tuple[list[RunSummary], bool]:
        if self.loaded:  # a reload: every run in one read
            return self.model.runs(), True
        return self.model.first_runs()  # opening: the newest page first, the rest after it

    def show(self, data: tuple[list[RunSummary], bool]) -> None:
        rows, complete = data
        self.complete = complete
        self.rows = {r.run_id: r for r in rows}
        if not complete:  # opening: one screenful first (each row added is measured), the rest
            self.window = min(self.window, max(self.app.size.height, 1))  # once it is painted
        self.rebuild()
        if not complete:  # (see Model.prefetch_runs)
            self.call_after_refresh(self._read_rest)

    @work(thread=True, group="rest")
    def _read_rest(self) -> None:

        try:
            rows = self.model.runs()
        except Exception as exc:  # shown, never fatal: see LilApp.journal_problem
            self.lil.ui(self.lil.journal_problem, exc)
            return
        self.lil.ui(self._show_rest, rows)

    def _show_rest(self, rows: list[RunSummary]) -> None:
        """All the runs: the rows events moved meanwhile stay as they are now."""
        moved = {k: v for k, v in self.rows.items() if k in self._touched}
        self.rows = {r.run_id: r for r in rows} | moved
        self.complete = True
        self.window = max(self.window, PAGE)
        self.rebuild()
        self.loaded += 1

    def visible_rows(self) -> list[RunSummary]:
        status, text = self.status_filter, self.text_filter
        rows = [r for r in self.rows.values() if matches(r, status, text)]
        rows.sort(key=SORT_KEYS[self.sort_key], reverse=self.sort_reverse)
        return rows

    def rebuild(self) -> None:
        """Fill the table with the first ``window`` matching runs in order (a table of tens of
        thousands of rows is slow to build and to update; moving past its end adds a page)."""
        table = self.table
        keep = self.selected_run()
        table.clear()
        rows = self.visible_rows()
        self.matching = len(rows)
        for r in rows[: self.window]:
            table.add_row(*self.cells(r), key=r.run_id)
        if keep is not None and keep.run_id in table.rows:
            table.move_cursor(row=table.get_row_index(keep.run_id), animate=False)
        self.update_state()

    def more(self) -> None:
        """Add the next page of matching runs below the last row."""
        table = self.table
        start = table.row_count
        if start >= self.matching:
            return
        self.window = start + PAGE
        for r in self.visible_rows()[start : self.window]:
            table.add_row(*self.cells(r), key=r.run_id)
        self.update_state()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row >= self.table.row_count - 1:
            self.more()

    def cells(self, r: RunSummary) -> tuple[Text, ...]:
        return cells(r, self.model.clock)

    def update_state(self) -> None:
        shown, total = self.table.row_count, len(self.rows)
        status = self.status_filter or "any status"
        order = "desc" if self.sort_reverse else "asc"
        count = f"{shown} of {total} runs"
        if shown < self.matching:
            count = f"{shown} of {self.matching} matching shown (End: more) · {total} runs"
        text = f"{count} · {status} · by {self.sort_key} {order}"
        if not self.complete:
            text = f"{shown} newest runs (reading all…) · {status} · by {self.sort_key} {order}"
        self.query_one("#runs-state", Label).update(text)

    # live -------------------------------------------------------------------------------------

    def journal_changed(self, message: JournalChanged) -> None:
        """Move the rows forward from the events at once; read the changed runs again later
        (costs, exact counts), in a worker, once they go quiet (see ``FULL_READ_QUIET``)."""
        if not self.is_mounted or not self.query("#runs"):  # (a push as the app closes)
            return
        by_run: dict[str, list[EventInfo]] = {}
        for e in message.events:
            if e.run_id and e.seq:  # seq 0: a notice this screen posted itself
                by_run.setdefault(e.run_id, []).append(e)
        if not by_run:
            return
        moved = []
        for run_id, events in by_run.items():
            self._touched[run_id] = events[-1].seq
            row = self.model.apply(self.rows.get(run_id), events)
            if row is not None:
                moved.append(row)
        if moved:
            self.merge(moved)
        self._dirty |= set(by_run)
        self._plan_full_read()

    def _plan_full_read(self) -> None:
        now = time.monotonic()
        if self._full_read is None:
            self._first_dirty = now
            self._full_read = self.set_timer(FULL_READ_QUIET, self._start_full_read)
        elif now - self._first_dirty < FULL_READ_MAX - FULL_READ_QUIET:
            self._full_read.reset()  # still busy: wait for a pause

    def _start_full_read(self) -> None:
        self._full_read = None
        if self._dirty and not self._fetching:
            ids, self._dirty = self._dirty, set()
            self._fetching = True
            self._read_runs(ids, dict(self._touched))

    @work(thread=True, group="dirty")
    def _read_runs(self, ids: set[str], seen: dict[str, int]) -> None:

        try:
            rows = self.model.runs_by_id(ids)
        except Exception as exc:  # shown, never fatal: see LilApp.journal_problem
            self.lil.ui(self.lil.journal_problem, exc)
            rows = []
        self.lil.ui(self._read_done, rows, seen)

    def _read_done(self, rows: list[RunSummary], seen: dict[str, int]) -> None:
        self._fetching = False
        fresh = [r for r in rows if self._touched.get(r.run_id) == seen.get(r.run_id)]
        self._dirty |= {r.run_id for r in rows if r not in fresh}  # newer events came meanwhile
        died = [
            r.run_id
            for r in fresh
            if r.status == "interrupted"
            and getattr(self.rows.get(r.run_id), "status", "") != r.status
        ]
        if fresh:
            self.merge(fresh)
        if died:  # a process that dies leaves no event: tell the other screens
            now = time.time()
            events = [
                EventInfo(0, run_id, "interrupted", None, None, None, now, {}) for run_id in died
            ]
            self.app.post_message(JournalChanged(events))
        if self._dirty:
            self._plan_full_read()

    def merge(self, rows: list[RunSummary]) -> None:
        """Update changed runs in place; a new one (or one that now passes the filter) rebuilds."""
        table = self.table
        rebuild = False
        for r in rows:
            self.rows[r.run_id] = r
            if r.run_id in table.rows:
                if not matches(r, self.status_filter, self.text_filter):
                    rebuild = True
                    continue
                for (key, _), value in zip(RUN_COLUMNS, self.cells(r), strict=True):
                    table.update_cell(r.run_id, key, value, update_width=True)
            elif matches(r, self.status_filter, self.text_filter):
                rebuild = True
        if rebuild:
            self.rebuild()
        self.loaded += 1

    # actions ----------------------------------------------------------------------------------

    def selected_run(self) -> RunSummary | None:
        table = self.table
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.rows.get(key or "")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        key = str(event.column_key.value)
        if key in SORT_KEYS:
            self.sort_reverse = not self.sort_reverse if key == self.sort_key else True
            self.sort_key = key
            self.rebuild()

    def action_open(self) -> None:
        row = self.selected_run()
        if row is not None:
            self.lil.open_run(row.run_id)

    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.window = PAGE
        self.text_filter = event.value
        self.rebuild()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()

    def action_status(self) -> None:
        self.window = PAGE
        cycle = [None, *STATUS_CYCLE]
        self.status_filter = cycle[(cycle.index(self.status_filter) + 1) % len(cycle)]
        self.rebuild()

    def action_sort(self) -> None:
        self.window = PAGE
        keys = list(SORT_KEYS)
        self.sort_key = keys[(keys.index(self.sort_key) + 1) % len(keys)]
        self.sort_reverse = self.sort_key in ("started", "duration", "cost")
        self.rebuild()
