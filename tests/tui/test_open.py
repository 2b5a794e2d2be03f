"""Opening ``lil-tui``: the newest page of runs comes from one read, every run is read once that
page is on screen, each screen reads once at mount, and only the runs screen is imported.

The journals are real (an owner process per test); the reads are counted by wrapping the real
``list_runs`` of the journal the app uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tui_workflows as wf
from textual.widgets import DataTable
from tui_helpers import cell, settle, until

from letitloop.journal.duckdb._client import open_journal
from letitloop.tui._app import LilApp
from letitloop.tui._model import FIRST_PAGE, Model
from letitloop.tui._runs import PAGE, RunsScreen
from tests.conftest import modules_after


def counted(journal_path: Path) -> tuple[LilApp, list[dict[str, Any]]]:
    """An app whose journal records each ``list_runs``: its limit and what the screen had
    shown when it was called."""
    journal = open_journal(journal_path)
    real = journal.list_runs
    calls: list[dict[str, Any]] = []
    app: LilApp | None = None

    def list_runs(**kwargs: Any) -> Any:
        screen = app.screen if app is not None and app.is_running else None
        calls.append(
            {
                "limit": kwargs.get("limit"),
                "loaded": getattr(screen, "loaded", 0),
                "rows": screen.table.row_count if isinstance(screen, RunsScreen) else 0,
            }
        )
        return real(**kwargs)

    journal.list_runs = list_runs  # type: ignore[method-assign]
    app = LilApp(journal_path, model=Model(journal_path, journal=journal))
    return app, calls


async def test_a_small_journal_is_read_once_at_open(journal_path: Path) -> None:
    wf.pipeline(journal_path, "p1")()
    wf.pipeline(journal_path, "p2", name="etl.other")()
    app, calls = counted(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.pause(0.5)  # a second read would have started by now
        assert app.screen.table.row_count == 2
        assert app.screen.loaded == 1
    # the first page held every run: no second read (there were three, and two reads of all)
    assert [c["limit"] for c in calls] == [FIRST_PAGE]


async def test_every_run_is_read_after_the_newest_page_is_on_screen(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    total = FIRST_PAGE + 25
    for i in range(total):
        run = f"bench.open:r{i:04d}"
        journal.open_run(run_id=run, workflow="bench.open", key=f"r{i:04d}")
        journal.release_run(run)
    app, calls = counted(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await until(pilot, lambda: len(screen.rows) == total and screen.complete)
        await settle(app, pilot)
        assert screen.table.row_count == PAGE  # the table's window: End adds the rest
        newest = f"bench.open:r{total - 1:04d}"
        assert cell(screen.table, newest, "run") == newest
        assert screen.table.get_row_index(newest) == 0
    first, rest = calls  # exactly two reads
    assert first["limit"] == FIRST_PAGE
    assert rest["limit"] > total
    # the newest screenful was on screen first (the table holds 40 rows for a 40-line terminal)
    assert rest["loaded"] >= 1 and rest["rows"] == 40


async def test_run_ids_with_markup_show_as_written(journal_path: Path) -> None:
    """A run id is data: ``[/]`` in it stopped the app (Rich markup), ``[bold]`` styled it."""
    journal = open_journal(journal_path)
    run = "shop[bold]:[/][/]1"  # the second [/] closes nothing: a MarkupError when rendered
    journal.open_run(run_id=run, workflow="shop[bold]", key="[/][/]1")
    journal.release_run(run)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#runs", DataTable)
        assert cell(table, run, "run") == run
        assert cell(table, run, "workflow") == "shop[bold]"
        await pilot.pause(0.2)  # painted without an error
        painted = "".join(s.text for s in table.render_line(1))
        assert run in painted and "shop[bold]" in painted
        assert app.is_running and app.return_code is None


def test_only_the_runs_screen_is_imported_to_open() -> None:
    loaded = modules_after("import letitloop.tui._app")
    assert "letitloop.tui._runs" in loaded
    later = {"_analytics", "_approvals", "_detail", "_effects", "_help", "_splices", "_queues"}
    assert not {f"letitloop.tui.{m}" for m in later} & loaded
    assert "letitloop.journal._analytics" not in loaded


async def test_every_mode_opens_its_screen_when_first_shown(journal_path: Path) -> None:
    wf.pipeline(journal_path, "p1")()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        names = {}
        for key in "234561":
            await pilot.press(key)
            await settle(app, pilot)
            names[key] = type(app.screen).__name__
        assert names == {
            "2": "ApprovalsScreen",
            "3": "EffectsScreen",
            "4": "SplicesScreen",
            "5": "AnalyticsScreen",
            "6": "QueuesScreen",
            "1": "RunsScreen",
        }
        await pilot.press("enter")  # the run's detail screen, imported on first use
        await until(pilot, lambda: type(app.screen).__name__ == "DetailScreen")
