"""The analytics screen (``5``): where the time and money went, across every run.

It draws the summary ``lil report`` prints (``journal._analytics.summary``): totals, a sparkline
per day of cost, attempts and failures, cost per workflow and model, the slowest steps and the
failure rates. ``t`` cycles the time it covers (all time, the last 30 days, 7 days, 24 hours);
it reads again when runs finish or fail.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Header, Label, Sparkline, Static

from letitloop import journal as an, operate as ops
from letitloop.tui._model import JournalChanged
from letitloop.tui._plain import PlainLabel, PlainStatic, column_table
from letitloop.tui._widgets import JournalScreen

# the times ``t`` steps through: (words, seconds back from now or None for all time)
WINDOWS: tuple[tuple[str, float | None], ...] = (
    ("all time", None),
    ("last 30 days", 30 * 86400.0),
    ("last 7 days", 7 * 86400.0),
    ("last 24 hours", 86400.0),
)
_KINDS = {"done", "fail", "ok", "err", "reset", "cancel"}  # events that change the numbers


class AnalyticsScreen(JournalScreen):
    """Totals, per-day sparklines and the report's tables for the whole journal."""

    DEFAULT_CSS = """
    AnalyticsScreen #an-totals { height: auto; padding: 0 1; background: $boost; }
    AnalyticsScreen #an-days { height: auto; padding: 0 1 1 1; }
    AnalyticsScreen #an-span { padding: 0; }
    AnalyticsScreen .an-spark-row { height: 1; }
    AnalyticsScreen .an-spark-label { width: 34; color: $text-muted; }
    AnalyticsScreen Sparkline { width: 1fr; height: 1; margin: 0; }
    AnalyticsScreen #an-main { height: 1fr; }
    AnalyticsScreen #an-right { width: 1fr; }
    AnalyticsScreen DataTable { height: 1fr; }
    AnalyticsScreen #an-cost { width: 1fr; }
    AnalyticsScreen .an-title { color: $accent; text-style: bold; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "window", "Time span"),
        Binding("r", "reload", "Reload"),
    ]
    reload_delay = 2.0  # the summary aggregates the whole journal: not after every event

    def __init__(self) -> None:
        super().__init__()
        self.window = 0
        self.summary: an.Summary | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield PlainStatic("Reading the journal…", id="an-totals")
        with Vertical(id="an-days"):
            yield PlainLabel("Per day", id="an-span", classes="an-title")
            for key, label in (("cost", "cost"), ("attempts", "attempts"), ("failed", "failed")):
                with Horizontal(classes="an-spark-row"):
                    yield PlainLabel(label, id=f"an-label-{key}", classes="an-spark-label")
                    yield Sparkline([], id=f"an-spark-{key}")
        with Horizontal(id="an-main"):
            with Vertical(id="an-cost"):
                yield PlainLabel("Cost per workflow and model", classes="an-title")
                yield column_table("an-by-model", "workflow", "model", "calls", "cost")
            with Vertical(id="an-right"):
                yield PlainLabel("Slowest steps", classes="an-title")
                yield column_table("an-slowest", "name", "attempts", "p50", "p95")
                yield PlainLabel("Failures and retries", classes="an-title")
                yield column_table("an-failures", "name", "attempts", "failed", "retries", "rate")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "analytics"
        super().on_mount()

    def since(self) -> float | None:
        back = WINDOWS[self.window][1]
        return None if back is None else self.model.clock.now() - back

    def fetch(self) -> an.Summary:
        return an.summary(self.model.journal, self.since())

    def show(self, data: an.Summary) -> None:
        self.summary = s = data
        window = WINDOWS[self.window][0]
        self.sub_title = f"analytics · {window}"
        totals = self.query_one("#an-totals", Static)
        if not s.runs and not s.attempts:
            totals.update(f"No runs in {window}. Press t for another time span.")
        else:
            failed = ops.pct(s.failed_runs / s.runs) if s.runs else "-"
            totals.update(
                Text.assemble(
                    (f"{s.runs:,} runs", "bold"),
                    f" ({s.failed_runs:,} failed, {failed}) · ",
                    (f"{s.attempts:,} step attempts", "bold"),
                    f" ({s.failed_attempts:,} failed) · cost ",
                    (ops.dollars(s.cost_usd), "bold green"),
                    f" · {s.tokens:,} tokens · saved by cache {ops.dollars(s.saved_usd)}",
                )
            )
        span = f" {s.days[0]} → {s.days[-1]}" if s.days else ""
        for key, values, fmt in (
            ("cost", s.daily_cost, ops.dollars),
            ("attempts", s.daily_attempts, lambda v: f"{v:,.0f}"),
            ("failed", s.daily_failed, lambda v: f"{v:,.0f}"),
        ):
            self.query_one(f"#an-spark-{key}", Sparkline).data = list(values)
            peak = fmt(max(values, default=0))
            label = f"{key} per day (peak {peak})"
            self.query_one(f"#an-label-{key}", Label).update(label)
        self.query_one("#an-span", Label).update(f"Per day{span}")
        _fill(
            self.query_one("#an-by-model", DataTable),
            [
                (r["workflow"], r["model"] or "-", f"{r['calls']:,}", ops.dollars(r["cost_usd"]))
                for r in s.by_workflow_model
            ],
        )
        _fill(
            self.query_one("#an-slowest", DataTable),
            [
                (
                    r["name"],
                    f"{r['attempts']:,}",
                    ops.duration(r["p50_s"]),
                    ops.duration(r["p95_s"]),
                )
                for r in s.slowest
            ],
        )
        _fill(
            self.query_one("#an-failures", DataTable),
            [
                (
                    r["name"],
                    f"{r['attempts']:,}",
                    f"{r['failed']:,}",
                    f"{r['retries']:,}",
                    Text(ops.pct(r["failure_rate"]), "red"),
                )
                for r in s.failures
            ],
        )

    def wants(self, message: JournalChanged) -> bool:
        return any(e.kind in _KINDS for e in message.events)

    def action_window(self) -> None:
        """The next time span: all time, 30 days, 7 days, 24 hours."""
        self.window = (self.window + 1) % len(WINDOWS)
        self.reload()

    def action_reload(self) -> None:
        self.reload()


def _fill(table: DataTable[Any], rows: list[tuple[Any, ...]]) -> None:
    table.clear()
    for row in rows:
        table.add_row(*row)
