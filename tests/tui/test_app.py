"""The app around the screens: help, the command palette, journal problems and recovery, the
``lil tui`` command and the lazy ``letitloop.tui`` package."""

from __future__ import annotations

from pathlib import Path

import pytest
import tui_workflows as wf
from click.testing import CliRunner
from textual.command import CommandList
from textual.widgets import DataTable
from tui_helpers import settle, until

from letitloop.errors import JournalUnavailableError
from letitloop.journal.duckdb._client import OwnerJournal, stop_owner
from letitloop.tui._app import LilApp
from letitloop.tui._effects import EffectsScreen
from letitloop.tui._help import HelpScreen
from letitloop.tui._splices import SplicesScreen
from tests.conftest import modules_after


async def test_help_panel_and_footer_show_the_bindings(journal_path: Path) -> None:
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        shown = {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show}
        assert {"R", "t", "b", "x", "1", "2", "3", "4", "question_mark", "q"} <= shown
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        assert not isinstance(app.screen, HelpScreen)


async def test_command_palette_switches_screens(journal_path: Path) -> None:
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"go to splices")
        await until(
            pilot,
            lambda: (
                app.screen.query_one(CommandList).option_count > 0
                and "Go to Splices"
                in str(app.screen.query_one(CommandList).get_option_at_index(0).prompt)
            ),
        )
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SplicesScreen))
        await pilot.press("3")
        assert isinstance(app.screen, EffectsScreen)


async def test_journal_problem_is_shown_and_the_app_recovers(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf.pipeline(journal_path, "p1")()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#runs", DataTable)
        assert table.row_count == 1

        def cannot_start(self: OwnerJournal) -> None:
            raise JournalUnavailableError("the journal owner could not be started (test)")

        monkeypatch.setattr(OwnerJournal, "_spawn", cannot_start)
        monkeypatch.setenv("LIL_CONNECT_TIMEOUT", "1")
        stop_owner(journal_path)  # the owner is gone and cannot come back for now
        app.screen.reload()
        await until(pilot, lambda: "journal unavailable" in app.sub_title)
        assert app.problem and "could not be started" in app.problem
        monkeypatch.undo()  # the owner can start again: the app notices by itself
        wf.pipeline(journal_path, "p2")()
        await until(pilot, lambda: app.problem is None, timeout=20)
        assert app.sub_title == ""
        await until(pilot, lambda: table.row_count == 2)


def test_lil_tui_command_help() -> None:
    from letitloop.cli._tui import tui

    assert tui.help and tui.help.splitlines()[0] == (
        "Open the terminal dashboard (runs, approvals, effects, splices)."
    )
    result = CliRunner().invoke(tui, ["--help"])
    assert result.exit_code == 0 and "--journal" in result.output


def test_importing_the_package_does_not_import_textual() -> None:
    loaded = modules_after("import letitloop.tui")
    assert "letitloop.tui" in loaded and "textual" not in loaded
