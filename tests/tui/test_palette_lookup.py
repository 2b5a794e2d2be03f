"""The command palette opens a run from any unambiguous prefix of its id or key, as every
``lil`` command does (it found screens only)."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandList
from tui_helpers import settle, until

from letitloop import durable, step
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen


async def test_a_key_prefix_in_the_palette_opens_the_run(journal_path: Path) -> None:
    @durable(journal=str(journal_path), name="palette.flow", run_id="9d6da7dd-order")
    def flow() -> int:
        return step("one", lambda: 1)

    @durable(journal=str(journal_path), name="palette.other", run_id="a1b2-other")
    def other() -> int:
        return step("one", lambda: 2)

    flow(), other()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"9d6d")
        palette = app.screen.query_one(CommandList)

        def first() -> str:
            return str(palette.get_option_at_index(0).prompt) if palette.option_count else ""

        await until(pilot, lambda: "Open run" in first())
        assert "palette.flow:9d6da7dd-order" in first()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        assert app.screen.run_id == "palette.flow:9d6da7dd-order"
