"""The run-detail screen: one run's steps as a timeline, the selected step's attempts with their
errors, tracebacks and output, the run's events, a chart of step durations and a cost meter.

It follows the run live: events of this run are appended to the log as they arrive and the rest
reloads (coalesced). The run actions of the runs screen work here too.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Label, RichLog, Sparkline, Static

from letitloop import operate as ops
from letitloop.journal import MapItems, who
from letitloop.operate import Outcome, RunSummary
from letitloop.tui._board import board_section
from letitloop.tui._events import describe
from letitloop.tui._model import MAX_SHOWN, DetailView, JournalChanged
from letitloop.tui._plain import PlainLabel, PlainStatic
from letitloop.tui._runs import RUN_BINDINGS, RunActions
from letitloop.tui._widgets import ConfirmScreen, JournalScreen, RowTable, status_text

# Fixed widths: a table refilled while it is laid out would otherwise size its columns
# differently from one time to the next.
# Together (with one column of padding on each side of a cell) they fit the table's half of a
# 140-column terminal, so the cost column is not cut off.
STEP_COLUMNS = (
    ("pos", "#", 3),
    ("name", "step", 18),
    ("status", "status", 13),
    ("attempts", "tries", 5),
    ("duration", "duration", 8),
    ("cost", "cost", 9),
)


def truncate_name(name: str, width: int = 14) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


class DetailScreen(RunActions, JournalScreen):
    """Everything about one run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        *RUN_BINDINGS,
        Binding("a", "approve", "Approve", show=False),
        Binding("f", "fork", "Fork from here"),
    ]

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.view: DetailView | None = None
        self.selected_position: int | None = None
        self._shown_steps: list[Any] = []
        self._shown_events = 0
        self._names: dict[int, str] = {}  # step names by position, for decision events

    def compose(self) -> ComposeResult:
        yield Header()
        yield PlainStatic("", id="summary")
        with Horizontal(id="detail-main"):
            yield RowTable(id="steps", columns=STEP_COLUMNS)
            with VerticalScroll(id="attempt-pane"):
                yield PlainStatic("", id="attempt")
        with Horizontal(id="detail-bottom"):
            with Vertical(id="chart-box"):
                yield PlainLabel("step durations", classes="caption", id="durations-caption")
                yield Sparkline([], id="durations")
                yield PlainStatic("", id="cost-meter")
            yield RichLog(id="events", max_lines=2000, wrap=False, markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.run_id
        self.query_one("#steps", DataTable).focus()
        super().on_mount()

    # data -------------------------------------------------------------------------------------

    def fetch(self) -> DetailView:
        return self.model.detail(self.run_id)

    def show(self, data: DetailView) -> None:
        first = self.view is None
        self.view = data
        run, clock = data.run, self.model.clock
        summary = Text.assemble(
            (f"{run.workflow}  ", "bold"),
            (run.run_id, ""),
            "   ",
            status_text(run.status),
            f"   steps {ops.shown(run)['steps']}   epoch {run.epoch}   try {run.attempt}",
            f"   started {clock.stamp(run.created)}   duration {clock.duration(run.seconds)}",
        )
        if (origin := run.forked_from) is not None:
            at = f"{origin.step} (#{origin.position})" if origin.step else f"#{origin.position}"
            summary.append(f"\nforked from {origin.run_id} at {at}", "cyan")
        if run.error:
            summary.append(f"\n{ops.error_line(run.error)}", style="red")
        if run.dead_letter:
            summary.append("\ndead-lettered: press t to retry the step, then R to resume", "yellow")
        if data.view.approvals:
            names = ", ".join(a.name for a in data.view.approvals)
            summary.append(f"\nwaiting for approval: {names} (press a)", "bold magenta")
        self.query_one("#summary", Static).update(summary)
        self.fill_steps(data)
        self.show_durations(data)
        self.query_one("#cost-meter", Static).update(self.cost_meter(data.run))
        if len(data.events) != self._shown_events:
            self._shown_events = len(data.events)
            log = self.query_one("#events", RichLog)
            log.clear()
            self._names.update({s.position: s.name for s in data.steps})
            for e in data.events:
                log.write(self.event_line(e))
        if first and data.steps:
            self.selected_position = data.steps[-1].position
            table = self.query_one("#steps", DataTable)
            table.move_cursor(row=table.row_count - 1, animate=False)
        self.show_attempts()

    def fill_steps(self, data: DetailView) -> None:
        table = self.query_one("#steps", DataTable)
        if data.steps == self._shown_steps:
            return
        self._shown_steps = data.steps
        cursor = table.cursor_row
        table.clear()
        for s in data.steps:
            table.add_row(
                str(s.position),
                s.name if s.kind == "step" else f"{s.name} ({s.kind})",
                status_text(s.status),
                str(s.attempts),
                self.model.clock.duration(s.seconds),
                ops.money(s.cost_micros),
                key=str(s.position),
            )
        if 0 <= cursor < table.row_count:
            table.move_cursor(row=cursor, animate=False)

    @staticmethod
    def cost_meter(run: RunSummary) -> Text:
        spent = run.cost_micros
        text = Text(f"cost {ops.money(spent)}", style="bold")
        if run.tokens:
            text.append(f"  {ops.tokens(run.tokens)}")
        budget = run.budget[0] if run.budget else None
        if budget:
            share = min(1.0, spent / budget)
            filled = round(share * 20)
            style = "red" if share >= 0.9 else "yellow" if share >= 0.6 else "green"
            text.append(f"\nbudget {ops.money(budget)} ")
            text.append("█" * filled, style=style)
            text.append("░" * (20 - filled), style="dim")
            text.append(f" {share:.0%}")
        elif run.saved_micros:
            text.append(f"\ncache saved {ops.money(run.saved_micros)}")
        return text

    def event_line(self, e: Any) -> Text:
        """One event as a sentence (``#1 publish approved by ana@laptop: "ship it"``)."""
        if e.position is not None and e.name:
            self._names[e.position] = e.name
        line = describe(e, self._names)
        stamp = self.model.clock.time(e.ts)
        return Text.assemble((stamp, "dim"), (f" {line.tag:<9}", "bold"), (line.text, line.style))

    def show_durations(self, data: DetailView) -> None:
        """The duration chart: a bar per step, the time its attempts that ended took (a killed
        attempt has no end and never counts), and its scale in words, the slowest step and the
        run's own duration, the one the header shows (a sparkline alone says nothing about
        whether the tallest bar is 3 ms or 3 minutes). With fewer than two steps it is hidden."""
        box = self.query_one("#chart-box", Vertical)
        clock = self.model.clock
        bars = [clock.spent(s.seconds) or 0.0 for s in data.steps]
        timed = [(s, secs) for s, secs in zip(data.steps, bars, strict=True) if secs > 0]
        chart = self.query_one("#durations", Sparkline)
        caption = self.query_one("#durations-caption", Label)
        if len(timed) < 2:
            chart.display = False
            caption.update("step durations: too few steps to chart" if timed else "")
            box.set_class(True, "no-chart")
            return
        chart.display = True
        box.set_class(False, "no-chart")
        slowest, most = max(timed, key=lambda pair: pair[1])
        total = data.run.seconds if data.run.seconds is not None else sum(s for _, s in timed)
        caption.update(
            f"step durations, {len(timed)} steps\n"
            f"slowest {truncate_name(slowest.name)} {ops.duration(most)}"
            f" · total {clock.duration(total)}"
        )
        chart.data = bars

    # the selected step ------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.selected_position = int(event.row_key.value)
            self.show_attempts()

    def show_attempts(self) -> None:
        pane = self.query_one("#attempt", Static)
        pos = self.selected_position
        tries = self.view.tries(pos) if self.view is not None and pos is not None else []
        board = board_section(self.view.view) if self.view is not None else None
        if self.view is None or not tries:
            result = self.view.view.result if self.view else None
            shown: RenderableType = Text("no steps yet", "dim")
            if result:
                shown = Syntax(result, "json", word_wrap=True)
            pane.update(Group(shown, board) if board is not None else shown)
            return
        clock = self.model.clock
        parts: list[RenderableType] = []
        last = tries[-1]
        parts.append(Text(f"{last.kind} {last.name} at position {last.position}", "bold"))
        for a in tries:
            head = Text(f"attempt {a.attempt}: ")
            head.append_text(status_text(a.status))
            head.append(f"  {clock.duration(ops.attempt_seconds(a))}")
            if a.cost_micros:
                head.append(f"  {ops.money(a.cost_micros)}")
            if a.model:
                head.append(f"  {a.model} {a.tokens_in}+{a.tokens_out} tokens")
            if a.cache:
                head.append(f"  cache {a.cache}")
            if a.resolution:
                head.append(f"  resolved {a.resolution} by {a.resolved_by}")
            parts.append(head)
            if a.error:
                parts.append(Text(f"  {ops.error_line(a.error)}", "red"))
                trace = a.error.get("traceback")
                if trace and a is last:
                    parts.append(Syntax(str(trace).rstrip(), "pytb", word_wrap=True))
        if pos is not None and (items := self.view.items(pos)) is not None:
            parts.append(self.map_items(items))
        parts.append(Text("\noutput", "bold"))
        parts.append(self.output(last))
        if self.view.view.result is not None:
            parts.append(Text("\nrun result", "bold"))
            parts.append(Syntax(self.view.view.result, "json", word_wrap=True))
        if board is not None:
            parts.append(board)
        pane.update(Group(*parts))

    @staticmethod
    def map_items(items: MapItems, shown: int = 200) -> RenderableType:
        """A map step's items under it: one line per item's child run, in item order."""
        lines = [Text(f"\nitems: {items.summary()}", "bold")]
        for index, run in items.items[:shown]:
            line = Text(f"  {index:>5}  ")
            line.append_text(status_text(run.status))
            line.append(f"  {run.run_id}")
            if run.cost_micros:
                line.append(f"  {ops.money(run.cost_micros)}")
            lines.append(line)
        if len(items.items) > shown:
            lines.append(Text(f"  … {len(items.items) - shown} more (lil runs show)", "dim"))
        return Group(*lines)

    @staticmethod
    def output(a: Any) -> RenderableType:
        """A step's output as the journal previews it (never decoded); an approval's decision
        shows its times as local times, not epoch seconds."""
        if a.preview is None:
            return Text("(none)", "dim")

        def cut(text: str) -> str:
            return ops.truncate(text, MAX_SHOWN)

        if a.codec == "json":
            try:
                value = json.loads(a.preview)
            except ValueError:  # a preview the journal already cut
                return Syntax(cut(a.preview), "json", word_wrap=True)
            if isinstance(value, str):  # text (often an LLM's markdown): highlighted as such
                if "\n" not in value:
                    return Text(cut(value))
                return Syntax(cut(value), "markdown", word_wrap=True)
            if a.kind == "approval":
                text = json.dumps(ops.human_times(value), indent=2, ensure_ascii=False)
                return Syntax(cut(text), "json", word_wrap=True)
            return Syntax(cut(a.preview), "json", word_wrap=True)
        return Text(cut(a.preview))

    # actions ----------------------------------------------------------------------------------

    def selected_run(self) -> RunSummary | None:
        return None if self.view is None else self.view.run

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_fork(self) -> None:
        """Fork this run at the selected step (``operate.fork``), then open the fork (R runs
        it)."""
        pos = self.selected_position
        if self.view is None or pos is None:
            return
        name = self._names.get(pos) or next(
            (s.name for s in self.view.steps if s.position == pos), f"#{pos}"
        )

        def opened(done: Outcome) -> None:
            self.lil.open_run(str(done.data["fork"]))

        def answered(answer: str | None) -> None:
            if answer is not None:
                self.run_write(ops.fork, self.run_id, pos, by=who(), after=opened)

        question = (
            f"Fork {self.run_id} from step {name} (position {pos})?\n"
            f"A new run reuses the journaled results of the {pos} position(s) before it and runs "
            "from it on, with the same arguments; this run is left as it is."
        )
        self.app.push_screen(ConfirmScreen(question, comment=False), answered)

    def action_approve(self) -> None:
        if self.view is not None and self.view.view.approvals:
            self.lil.switch_mode("approvals")

    def wants(self, message: JournalChanged) -> bool:
        return self.run_id in message.run_ids

    def journal_changed(self, message: JournalChanged) -> None:
        if not self.wants(message):
            return
        if self.is_current:
            log = self.query_one("#events", RichLog)
            for e in message.events:
                if e.run_id == self.run_id:
                    log.write(self.event_line(e))
        super().journal_changed(message)
