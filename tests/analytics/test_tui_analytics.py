"""lil-tui's analytics screen (key 5) on a real journal: the numbers, the time spans of ``t``,
a live reload when a run finishes, and a snapshot of the screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import synthetic
from textual.widgets import DataTable, Sparkline, Static

from letitloop.journal import open_journal
from letitloop.tui._analytics import AnalyticsScreen
from letitloop.tui._app import LilApp
from letitloop.tui._model import Clock, FrozenClock
from tests.helpers import wait_until_async

SIZE = (140, 36)


class LateClock(Clock):
    """Half a day after the last made-up run started: 24 hours back reach into its last day."""

    def now(self) -> float:
        return synthetic.START + 6.5 * synthetic.DAY


async def settle(app: Any, pilot: Any) -> None:
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def until_loaded(app: Any, pilot: Any, count: int) -> AnalyticsScreen:
    await wait_until_async(
        lambda: isinstance(app.screen, AnalyticsScreen) and app.screen.loaded >= count,
        30,
        what="the analytics screen to load",
        pause=pilot.pause,
    )
    return app.screen


def totals(screen: AnalyticsScreen) -> str:
    return str(screen.query_one("#an-totals", Static).render())


async def test_analytics_screen_numbers_spans_and_live_reload(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    synthetic.fill(journal)
    app = LilApp(journal_path, clock=LateClock())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        screen = await until_loaded(app, pilot, 1)
        titles = [c.title for c in app.get_system_commands(screen)]
        assert "Go to Analytics" in titles  # the command palette reaches it too
        assert "60 runs (5 failed, 8.3%)" in totals(screen)
        assert "342 step attempts (47 failed)" in totals(screen) and "$0.0833" in totals(screen)
        slowest = screen.query_one("#an-slowest", DataTable)
        assert str(slowest.get_row_at(0)[0]) == "summarize"
        assert screen.query_one("#an-by-model", DataTable).row_count == 9
        failures = screen.query_one("#an-failures", DataTable)
        assert [str(c) for c in failures.get_row_at(0)] == ["notify", "68", "13", "8", "19.1%"]
        assert len(screen.query_one("#an-spark-cost", Sparkline).data or []) == 7
        seen = []
        for n in range(2, 5):  # 30 days, 7 days, 24 hours
            await pilot.press("t")
            await until_loaded(app, pilot, n)
            assert screen.summary is not None
            seen.append((screen.sub_title, screen.summary.attempts))
        assert [t for t, _ in seen] == [
            "analytics · last 30 days",
            "analytics · last 7 days",
            "analytics · last 24 hours",
        ]
        assert seen[0][1] == seen[1][1] == 342 > seen[2][1] > 0
        # a run that finishes while the screen is shown: it reads again by itself
        extra = next(synthetic.records(synthetic.Shape(runs=1)))
        for rec in extra:
            rec["run"] = "late-run"
            rec["ts"] = LateClock().now() - 60
        journal.import_records(extra)
        runs_before, before = screen.summary.runs, screen.loaded
        await until_loaded(app, pilot, before + 1)
        assert screen.summary is not None and screen.summary.runs == runs_before + 1
        assert screen.summary.attempts == seen[2][1] + 5 and "late-run" not in totals(screen)


def test_analytics_screen_snapshot(journal_path: Path, snap_compare: Any) -> None:
    synthetic.fill(open_journal(journal_path))

    async def before(pilot: Any) -> None:
        await settle(pilot.app, pilot)
        await pilot.press("5")
        screen = await until_loaded(pilot.app, pilot, 1)
        await settle(pilot.app, pilot)
        # the tables size their columns to the new rows on a later refresh: a capture before it
        # shows every column clipped to its header
        await wait_until_async(
            lambda: (
                not any(
                    t._require_update_dimensions or t._updated_cells
                    for t in screen.query(DataTable)
                )
            ),
            15,
            what="the analytics tables to size their columns",
            pause=pilot.pause,
        )
        await pilot.pause()

    app = LilApp(journal_path, clock=FrozenClock())
    assert snap_compare(app, terminal_size=SIZE, run_before=before)
