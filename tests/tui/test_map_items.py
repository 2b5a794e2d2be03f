"""lil-tui shows a map step's items under it: each item's child run, in item order."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Static
from tui_helpers import settle, until

from letitloop import durable, step
from letitloop.errors import MapItemError
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen


def _fan(journal: Path) -> str:
    def maybe(i: int) -> int:
        if i == 2:
            raise ValueError("two")
        return i

    @durable(journal=str(journal), name="tui_fan", run_id="f1")
    def fan() -> list[int]:
        step("prepare", lambda: "ok")
        return step.map("maybe", maybe, range(4), max_in_flight=1)

    with pytest.raises(MapItemError):
        fan()
    return "tui_fan:f1"


async def test_the_map_step_lists_its_items(journal_path: Path) -> None:
    run_id = _fan(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(180, 50)) as pilot:
        await settle(app, pilot)
        app.open_run(run_id)
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        table = screen.query_one("#steps", DataTable)
        await until(pilot, lambda: table.row_count == 2)
        assert "maybe (map)" in str(table.get_row_at(1)[1])
        table.move_cursor(row=1)
        await settle(app, pilot)
        pane = screen.query_one("#attempt", Static)

        def shown() -> str:
            from rich.console import Console

            console = Console(width=170, record=True)
            console.print(pane.content)
            return console.export_text()

        await until(pilot, lambda: "items:" in shown())
        text = shown()
    assert "items: 2 completed, 1 failed of 3 items" in text
    rows = [r.split() for r in text.splitlines() if r.split()[:1] and r.split()[0].isdigit()]
    assert [(r[0], r[1]) for r in rows] == [("0", "completed"), ("1", "completed"), ("2", "failed")]
