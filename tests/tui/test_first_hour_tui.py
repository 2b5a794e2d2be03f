"""Issue 15, points 12 and 13 in lil-tui: decisions read as sentences in the events pane, ``?``
explains every key in words, the approvals table fits its pane, Home/End move the cursor, and
the duration chart says its scale (or hides). Journals are filled by real workflows; the app
runs under Textual's Pilot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tui_workflows as wf
from textual.widgets import DataTable, Label, RichLog, Sparkline
from tui_helpers import settle, until

from letitloop import durable, step
from letitloop.errors import ApprovalPending
from letitloop.journal._contract import EventInfo
from letitloop.journal.duckdb._client import open_journal
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen
from letitloop.tui._events import describe
from letitloop.tui._help import EXPLAIN, HelpScreen

LONG_KEY = "9d6da7dd0c1f4e2b8a7d6c5b4a39281706f5e4d3"


def log_lines(screen: Any) -> list[str]:
    return [line.text for line in screen.query_one("#events", RichLog).lines]


def label_text(label: Label) -> str:
    return str(label.render())


# -- the events pane -----------------------------------------------------------------------


async def test_the_events_pane_says_who_decided_what(journal_path: Path) -> None:
    """Was ``answer   #1 None``: now the step's name, the decision, who made it and why."""
    with pytest.raises(ApprovalPending):
        wf.editable(journal_path)()
    journal = open_journal(journal_path)
    (pending,) = journal.approvals(status="pending")
    journal.decide_approval(pending.id, approved=True, by="ana@laptop", comment="ship it")
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        app.open_run("blog.edit:post-2")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await until(pilot, lambda: any("approved" in line for line in log_lines(screen)))
        lines = log_lines(screen)
    text = "\n".join(lines)
    assert '#1 publish approved by ana@laptop: "ship it"' in text
    assert "#1 publish asks for approval" in text
    assert "run suspended: approval 'publish'" in text
    assert "#0 draft done" in text
    assert "None" not in text


def event(kind: str, position: int | None = None, **data: Any) -> EventInfo:
    return EventInfo(1, "r", kind, position, 1, None, 0.0, {"k": kind, **data})


def test_every_decision_reads_as_a_sentence() -> None:
    names = {2: "send_email", 3: "call_llm"}
    said = {
        "resolve done": describe(event("resolve", 2, res="done", by="bo@h"), names).text,
        "resolve redo": describe(event("resolve", 2, res="redo", by="bo@h"), names).text,
        "rearm": describe(event("resolve", 3, res="rearm", by="bo@h"), names).text,
        "reject": describe(event("answer", 3, ok=False, by="bo@h", comment="too long"), names).text,
        "timeout": describe(event("answer", 3, ok=True, timeout=True), names).text,
        "edited": describe(event("answer", 3, ok=True, by="bo@h", payload="{}"), names).text,
        "reset": describe(event("reset", by="bo@h"), names).text,
        "cancel": describe(event("cancel", by="bo@h", reason="runaway costs"), names).text,
        "budget": describe(event("budget", by="bo@h", usd_micros=5_000_000), names).text,
        "splice": describe(event("decide", id="c0ffee", state="applied", by="bo@h"), names).text,
        "error": describe(event("err", 3, err={"type": "x.RateLimit", "message": "429"}), names),
    }
    assert (
        said["resolve done"]
        == "#2 send_email marked done (it happened; it will not run again) by bo@h"
    )
    assert said["resolve redo"] == "#2 send_email marked redo (it runs again on resume) by bo@h"
    assert said["rearm"].startswith("#3 call_llm re-armed")
    assert said["reject"] == '#3 call_llm rejected by bo@h: "too long"'
    assert said["timeout"] == "#3 call_llm timed out: approved automatically"
    assert said["edited"] == "#3 call_llm approved by bo@h with an edited payload"
    assert said["reset"] == "run reset by bo@h: the next call runs every step again"
    assert said["cancel"] == 'run cancelled by bo@h: "runaway costs"'
    assert said["budget"] == "budget set to $5.00 by bo@h"
    assert said["splice"] == "splice c0ffee applied by bo@h"
    assert said["error"].text == "#3 call_llm failed: RateLimit: 429"
    assert said["error"].style == "red"
    assert describe(event("newkind", 4), names).text == "#4 ?"  # a newer journal never breaks it


# -- ? explains each key --------------------------------------------------------------------


async def test_question_mark_explains_every_key_in_words(journal_path: Path) -> None:
    wf.pipeline(journal_path, "p1")()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        footer = [b.binding for b in app.screen.active_bindings.values() if b.binding.show]
        await pilot.press("question_mark")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = dict(help_screen.rows)
        assert rows["x"].startswith("Start the selected run over: its next call runs every step")
        assert "Asks first" in rows["x"] and "Asks first" in rows["c"]
        assert rows["R"].startswith("Continue the selected run in a background process")
        assert rows["home ^home"] == "Move to the first row."
        assert rows["end ^end"].startswith("Move to the last row")
        for binding in footer:  # every key in the footer has its sentence, not just a word
            assert len(EXPLAIN[binding.action].split()) >= 5, binding
        assert all(len(text.split()) >= 4 for _, text in help_screen.rows), help_screen.rows
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("3", "question_mark")
        rows = dict(app.screen.rows)  # type: ignore[attr-defined]
        assert "never runs again" in rows["d"] and "runs again when the run is resumed" in rows["r"]
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_every_binding_of_every_screen_has_an_explanation() -> None:
    from letitloop.tui._app import LilApp as App
    from letitloop.tui._approvals import ApprovalsScreen
    from letitloop.tui._effects import EffectsScreen
    from letitloop.tui._runs import RunsScreen
    from letitloop.tui._splices import SplicesScreen

    for owner in (App, RunsScreen, DetailScreen, ApprovalsScreen, EffectsScreen, SplicesScreen):
        for b in owner.BINDINGS:
            action = b.action if hasattr(b, "action") else b[1]  # type: ignore[index]
            assert action in EXPLAIN, (owner.__name__, action)


# -- the approvals table fits ------------------------------------------------------------------


async def test_the_approvals_table_fits_its_pane(journal_path: Path) -> None:
    """A run id as long as a derived key made the table wider than its half of an 100-column
    terminal: the columns on its right were cut off."""
    with pytest.raises(ApprovalPending):
        wf.editable(journal_path, key=LONG_KEY)()
    app = LilApp(journal_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        table = app.screen.query_one("#approvals", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        await pilot.pause()
        assert table.virtual_size.width <= table.size.width, (table.virtual_size, table.size)
        run_cell = str(table.get_cell_at((0, 1)))
        assert run_cell.startswith("blog.edit:") and "…" in run_cell
        assert run_cell.endswith(LONG_KEY[-2:])
        assert str(table.get_cell_at((0, 4))) == "yes"
        await pilot.resize_terminal(160, 30)
        await settle(app, pilot)
        assert table.virtual_size.width <= table.size.width
        assert str(table.get_cell_at((0, 1))) == f"blog.edit:{LONG_KEY}"


# -- Home and End ------------------------------------------------------------------------------


async def test_home_and_end_move_the_cursor(journal_path: Path) -> None:
    for key in ("a", "b", "c", "d"):
        wf.pipeline(journal_path, key)()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        runs = app.screen.query_one("#runs", DataTable)
        assert runs.row_count == 4 and runs.cursor_row == 0
        await pilot.press("end")
        assert runs.cursor_row == 3
        await pilot.press("home")
        assert runs.cursor_row == 0
        await pilot.press("enter")
        await settle(app, pilot)
        steps = app.screen.query_one("#steps", DataTable)
        assert steps.cursor_row == 2  # the last step is selected when a run opens
        await pilot.press("home")
        assert steps.cursor_row == 0
        await pilot.press("end")
        assert steps.cursor_row == 2


# -- the duration chart ------------------------------------------------------------------------


async def test_the_duration_chart_gives_its_scale_for_millisecond_steps(
    journal_path: Path,
) -> None:
    wf.pipeline(journal_path, "p1")()  # three steps of about a millisecond each

    @durable(journal=journal_path, name="one.step", run_id="solo")
    def solo() -> int:
        return step("only", lambda: 1)

    solo()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        app.open_run("etl.pipeline:p1")
        await settle(app, pilot)
        caption = label_text(app.screen.query_one("#durations-caption", Label))
        chart = app.screen.query_one("#durations", Sparkline)
        assert chart.display
        assert caption.startswith("step durations, 3 steps")
        assert "slowest " in caption and "ms" in caption and "total " in caption
        app.pop_screen()
        app.open_run("one.step:solo")
        await settle(app, pilot)
        assert not app.screen.query_one("#durations", Sparkline).display
        caption = label_text(app.screen.query_one("#durations-caption", Label))
        assert "too few steps" in caption
