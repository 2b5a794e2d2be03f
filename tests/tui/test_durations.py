"""Durations in lil-tui are the time a run's tries really ran, by operate's rule: not the time
since it was created (a 12 ms run showed 119 s after a later resume), and never the time since a
killed attempt started (a completed 46 ms run charted "total 8.7m", and growing, while its
header said 46 ms)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
import tui_workflows as wf
from textual.widgets import Label, Sparkline, Static
from tui_helpers import killed, plain, settle, until

from letitloop import durable, step
from letitloop.journal import open_journal
from letitloop.operate import attempt_seconds, duration
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen
from letitloop.tui._model import Model
from letitloop.tui._runs import cells


def test_a_resumed_runs_duration_is_the_sum_of_its_tries(journal_path: Path) -> None:
    fail = [True]

    def flaky() -> int:
        if fail[0]:
            raise RuntimeError("first try")
        return 1

    @durable(journal=str(journal_path), name="twice", run_id="t1")
    def twice() -> int:
        return step("flaky", flaky)

    with pytest.raises(RuntimeError):
        twice()
    time.sleep(2.0)  # the run waits, failed, for a person: no try is running
    fail[0] = False
    assert twice() == 1

    model = Model(journal_path)
    (row,) = [r for r in model.runs() if r.workflow == "twice"]
    assert row.updated - row.created >= 2.0
    assert row.seconds is not None and row.seconds < 1.0, row
    shown = cells(row, model.clock)[6].plain  # the runs table's duration column
    assert shown.endswith("ms") and shown == duration(row.seconds), shown


def _numbers(detail: DetailScreen) -> tuple[str, str, list[float]]:
    """The header's duration, the chart's total and its bars, as on screen."""
    header = plain(detail.query_one("#summary", Static))
    caption = str(detail.query_one("#durations-caption", Label).render())
    said = re.search(r"duration (\S+)", header)
    total = re.search(r"total (\S+)", caption)
    assert said and total, (header, caption)
    return said.group(1), total.group(1), list(detail.query_one("#durations", Sparkline).data)


async def test_a_killed_attempt_never_counts_as_running(journal_path: Path) -> None:
    """A run SIGKILLed inside its second step (a real process), then completed: its chart's
    total is its duration in the header, and stays so while time passes."""
    killed(journal_path, "quick")
    time.sleep(1.5)  # the killed attempt's start ages: it must not count
    assert wf.quick(journal_path)() == 6
    run = open_journal(journal_path).get_run("etl.quick:q1")
    tries = [a for a in run.attempts if a.name == "second"]
    assert [a.status for a in tries] == ["started", "completed"]  # the first one was killed
    assert run.run.active_seconds is not None and run.run.active_seconds < 1.0
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.open_run("etl.quick:q1")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.view)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        header, total, bars = _numbers(detail)
        assert header == total == duration(run.run.active_seconds), (header, total)
        ended = [attempt_seconds(a) for a in run.attempts if attempt_seconds(a) is not None]
        assert len(bars) == 3 and max(bars) == pytest.approx(max(ended))  # ended tries only
        await asyncio.sleep(1.2)  # time passes: nothing of the run is running
        loaded = detail.loaded
        detail.reload()
        await until(pilot, lambda: detail.loaded > loaded)
        assert _numbers(detail) == (header, total, bars)
