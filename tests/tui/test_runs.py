"""The runs screen and run detail, on journals filled by real durable workflows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tui_workflows as wf
from textual.widgets import DataTable, Input, RichLog, Sparkline, Static
from tui_helpers import HERE, cell, in_doubt, plain, settle, until

from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen
from letitloop.tui._runs import RunsScreen

ROOT = HERE.parents[1]


def fill(journal_path: Path) -> None:
    wf.pipeline(journal_path, "p1")()
    wf.pipeline(journal_path, "p2", name="etl.other")()
    with pytest.raises(ZeroDivisionError):
        wf.failing(journal_path)()


async def test_runs_table_lists_every_run_with_status_steps_and_cost(journal_path: Path) -> None:
    fill(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        table = screen.query_one("#runs", DataTable)
        assert table.row_count == 3
        assert cell(table, "etl.pipeline:p1", "status") == "completed"
        assert cell(table, "etl.pipeline:p1", "steps") == "3/3"
        assert cell(table, "etl.pipeline:p1", "cost") == "$0.0006"
        assert cell(table, "etl.failing:f1", "status") == "failed"
        assert cell(table, "etl.failing:f1", "steps") == "1/2"


async def test_filter_by_text_and_status_and_sort(journal_path: Path) -> None:
    fill(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        table = screen.query_one("#runs", DataTable)
        await pilot.press("slash", *"other")
        assert screen.query_one("#filter", Input).has_focus
        assert [r.value for r in table.rows] == ["etl.other:p2"]
        await pilot.press("enter", "ctrl+a")  # back to the table
        screen.query_one("#filter", Input).value = ""
        await pilot.pause()
        assert table.row_count == 3
        await pilot.press("s", "s", "s")  # any -> running -> suspended -> failed
        assert screen.status_filter == "failed"
        assert [r.value for r in table.rows] == ["etl.failing:f1"]
        await pilot.press("s", "s", "s", "s", "s")  # ... cancelled, reset, back to any status
        assert screen.status_filter is None and table.row_count == 3
        await pilot.press("o")  # sort by status
        assert screen.sort_key == "status"
        order = [r.key.value for r in table.ordered_rows]
        assert [cell(table, k, "status") for k in order] == ["completed", "completed", "failed"]


async def test_a_run_in_another_process_appears_and_progresses_live(
    journal_path: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#runs", DataTable)
        assert table.row_count == 0
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "tui_workflows.py"), str(journal_path), "slow", str(gate)],
            cwd=ROOT,
        )
        try:
            await until(pilot, lambda: "live.slow:s1" in table.rows)
            await until(pilot, lambda: cell(table, "live.slow:s1", "current") == "wait")
            assert cell(table, "live.slow:s1", "status") == "running"
            gate.touch()
            await until(pilot, lambda: cell(table, "live.slow:s1", "status") == "completed")
            assert cell(table, "live.slow:s1", "steps") == "3/3"
        finally:
            gate.touch()
            assert proc.wait(30) == 0


async def test_detail_shows_timeline_attempts_traceback_output_and_events(
    journal_path: Path,
) -> None:
    fill(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        runs = app.screen
        table = runs.query_one("#runs", DataTable)
        table.move_cursor(row=table.get_row_index("etl.failing:f1"))
        await pilot.press("enter")
        await settle(app, pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen) and detail.run_id == "etl.failing:f1"
        steps = detail.query_one("#steps", DataTable)
        assert [cell(steps, k.value, "name") for k in steps.rows] == ["load", "divide"]
        assert cell(steps, "1", "status") == "failed"
        shown = plain(detail.query_one("#attempt", Static))
        assert "ZeroDivisionError: division by zero" in shown
        assert "Traceback" in shown and "tui_workflows.py" in shown
        await pilot.press("up")  # the completed step: its output
        shown = plain(detail.query_one("#attempt", Static))
        assert "loaded" in shown and "completed" in shown
        log = detail.query_one("#events", RichLog)
        text = "\n".join(line.text for line in log.lines)
        assert "fail" in text and "#1 divide" in text
        assert len(detail.query_one("#durations", Sparkline).data or []) == 2
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)


async def test_detail_shows_json_output_and_cost(journal_path: Path) -> None:
    fill(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.open_run("etl.pipeline:p1")
        await settle(app, pilot)
        detail = app.screen
        shown = plain(detail.query_one("#attempt", Static))
        assert '"label": "store"' in shown and "run result" in shown
        assert "cost $0.0006" in plain(detail.query_one("#cost-meter", Static))


async def test_large_text_output_is_highlighted_and_cut(journal_path: Path) -> None:
    wf.writer(journal_path)()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.open_run("agent.writer:w1")
        await settle(app, pilot)
        pane = app.screen.query_one("#attempt", Static)
        shown = plain(pane)
        assert "# Report" in shown and "bytes)" in shown  # the preview says what it cut
        assert len(shown) < 10_000  # 15,000 characters of output were cut


async def test_mouse_click_on_a_header_sorts_and_on_a_row_opens(journal_path: Path) -> None:
    fill(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        table = screen.query_one("#runs", DataTable)
        x = sum(c.get_render_width(table) for c in list(table.columns.values())[:2]) + 2
        await pilot.click("#runs", offset=(x, 0))  # the "status" header
        await until(pilot, lambda: screen.sort_key == "status")
        second = table.ordered_rows[1].key.value
        await pilot.click("#runs", offset=(2, 2))  # the second row: the cursor moves there ...
        assert table.cursor_row == 1 and isinstance(app.screen, type(screen))
        await pilot.click("#runs", offset=(2, 2))  # ... and a click on the cursor opens it
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        assert app.screen.run_id == second


async def test_a_process_killed_mid_run_shows_as_interrupted_and_in_doubt(
    journal_path: Path, tmp_path: Path
) -> None:

    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        runs = app.screen
        await pilot.press("3")  # watch the effects screen while it happens
        await settle(app, pilot)
        effects = app.screen.query_one("#effects", DataTable)
        assert effects.row_count == 0
        in_doubt(journal_path, tmp_path / "sent.txt")  # SIGKILLed inside its marker block
        # the death leaves no event: both screens find out by reading again on their own
        await until(pilot, lambda: effects.row_count == 1)
        await pilot.press("1")
        assert app.screen is runs
        table = runs.query_one("#runs", DataTable)
        await until(pilot, lambda: cell(table, "shop.notify:order-1", "status") == "interrupted")


async def test_an_event_pushed_while_the_runs_table_is_gone_is_ignored(journal_path: Path) -> None:
    """A push that lands as the app closes (its table already removed) must not stop the app
    with NoMatches (benchmarks/tui.py's live figure did, quitting right after a write)."""
    from letitloop.journal import EventInfo
    from letitloop.tui._model import JournalChanged

    fill(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await screen.query_one("#runs", DataTable).remove()
        data = {"k": "step", "run": "etl.pipeline:p1", "pos": 9, "name": "late"}
        event = EventInfo(10**9, "etl.pipeline:p1", "step", 9, 1, "late", 1.0, data)
        screen.journal_changed(JournalChanged([event]))  # raised NoMatches before
        await pilot.pause()
