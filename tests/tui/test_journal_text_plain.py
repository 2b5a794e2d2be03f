"""Text from the journal is data on every lil-tui screen: never parsed as markup.

A printable run id such as ``evil[/]run`` stopped the dashboard with ``MarkupError`` when ``c``
was pressed, and step names, errors, approval names, marker names and a splice's reason were
rendered as bold text, links or click actions. Real workflows fill a real journal with such text
(``markup_workflows``); every screen and action runs under Textual's Pilot, and what the screen
shows (its rendered characters, its notifications) must hold the text exactly as written.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import markup_workflows as mw
import pytest
from rich.console import Console
from textual.command import CommandList
from textual.widgets import DataTable, Label
from textual.widgets._toast import Toast
from tui_helpers import HERE, ROOT, settle, until

from letitloop.errors import ApprovalPending
from letitloop.journal.duckdb._client import open_journal
from letitloop.splice import propose_splice
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen
from letitloop.tui._help import HelpScreen
from letitloop.tui._widgets import ConfirmScreen, PromptScreen

SIZE = (200, 50)


def screen_text(app: Any) -> str:
    """Every character the terminal shows now, the screens below a dialog included."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(
        app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    )
    return console.export_text()


def dialog(app: Any) -> str:
    """The text of the dialog on top (its labels, as they render: a dialog wraps its lines)."""
    return "\n".join(label.visual.plain for label in app.screen.query(Label))


def toasts(app: Any) -> str:
    """The text of every notification on screen."""
    return "\n".join(toast.render().plain for toast in app.screen.query(Toast))


async def shows(pilot: Any, app: Any, *texts: str) -> None:
    """Wait until the screen shows each text exactly as written."""
    try:
        await until(pilot, lambda: all(t in screen_text(app) for t in texts), timeout=20)
    except AssertionError:
        missing = [t for t in texts if t not in screen_text(app)]
        raise AssertionError(f"not shown: {missing}\n{screen_text(app)}") from None


async def notified(pilot: Any, app: Any, text: str) -> None:
    """Wait until a notification says ``text`` exactly as written."""
    try:
        await until(pilot, lambda: text in toasts(app), timeout=20)
    except AssertionError:
        raise AssertionError(f"not notified: {text!r}\n{toasts(app)}") from None


async def select(pilot: Any, table: DataTable[Any], key: str) -> None:
    await until(pilot, lambda: key in table.rows)
    table.move_cursor(row=table.get_row_index(key), animate=False)
    await pilot.pause()


def _failed(journal_path: Path) -> None:
    with pytest.raises(ValueError):
        mw.failing(journal_path)()


async def test_runs_screen_and_its_actions_show_run_ids_as_written(journal_path: Path) -> None:
    _failed(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#runs", DataTable)
        await select(pilot, table, mw.FLOW_ID)
        await shows(pilot, app, mw.FLOW_ID)
        await pilot.press("b")
        assert isinstance(app.screen, PromptScreen)
        assert f"New budget of {mw.FLOW_ID} in USD" in dialog(app)
        await pilot.press("escape")
        await pilot.press("t")  # nothing is dead-lettered: said with its id
        await notified(pilot, app, f"{mw.FLOW_ID} has no dead-lettered step to retry")
        await pilot.press("c")  # it stopped the app with MarkupError
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Cancel {mw.FLOW_ID} (failed, 2/2 steps)?" in dialog(app)
        await pilot.press(*"[bold]why[/bold]", "enter")
        await notified(pilot, app, f"cancelled {mw.FLOW_ID}")
        await until(pilot, lambda: table.get_cell(mw.FLOW_ID, "status").plain == "cancelled")
        await pilot.press("x")
        assert f"Reset {mw.FLOW_ID} (cancelled" in dialog(app)
        await pilot.press("escape")
        await pilot.press("c")  # cancelled: nothing to cancel, said with its id
        await notified(pilot, app, f"{mw.FLOW_ID} is cancelled: nothing to cancel")
        # a run that fails while the dashboard is open pops up an alert naming it
        with pytest.raises(RuntimeError):
            await asyncio.to_thread(mw.live(journal_path))
        await notified(pilot, app, f"run {mw.LIVE_ID}")
        await shows(pilot, app, mw.LIVE_ID)
        # the command palette finds a run by its id
        await pilot.press("ctrl+p", *"evil.flow")
        palette = app.screen.query_one(CommandList)

        def first() -> str:
            return palette.get_option_at_index(0).prompt.plain if palette.option_count else ""

        await until(pilot, lambda: "Open run" in first())
        assert f"Open run {mw.FLOW_ID}" in first()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        assert app.screen.run_id == mw.FLOW_ID
    assert app.return_code in (None, 0)  # it ended because the test ended, not by a click


async def test_run_detail_fork_and_help_show_steps_and_errors_as_written(
    journal_path: Path,
) -> None:
    _failed(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        app.open_run(mw.FLOW_ID)
        detail = await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen)
        await until(pilot, lambda: detail.view is not None and len(detail.view.steps) == 2)
        steps = detail.query_one("#steps", DataTable)
        # the summary and its error, the steps table, the selected step's output, the event log,
        # the durations caption (the slowest step's name, cut to 14 characters)
        await shows(pilot, app, mw.FLOW_ID, mw.ERROR, mw.STEP1, mw.STEP2[:13])
        await shows(pilot, app, f"step {mw.STEP2} at position 1", '"[/]"')
        assert str(steps.get_cell("0", "name")) == mw.STEP1
        await pilot.press("up")
        await until(pilot, lambda: detail.selected_position == 0)
        await shows(pilot, app, f"step {mw.STEP1} at position 0", mw.OUTPUT)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert f"Keys on this screen ({mw.FLOW_ID})" in dialog(app)
        await pilot.press("escape")
        await pilot.press("f")
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Fork {mw.FLOW_ID} from step {mw.STEP1} (position 0)?" in dialog(app)
        await pilot.press("enter")
        await notified(pilot, app, f"forked {mw.FLOW_ID} at position 0")
        await until(
            pilot, lambda: app.screen is not detail and isinstance(app.screen, DetailScreen)
        )
        await shows(pilot, app, f"forked from {mw.FLOW_ID}")


async def test_approvals_show_names_and_payloads_as_written(journal_path: Path) -> None:
    with pytest.raises(ApprovalPending):
        mw.asking(journal_path)()
    app = LilApp(journal_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        table = app.screen.query_one("#approvals", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        await shows(pilot, app, mw.APPROVAL, mw.ASK_ID, '"[bold]t[/bold]"')
        await pilot.press("e")  # no schema: cannot be edited, said with its name
        await notified(pilot, app, f"{mw.APPROVAL} declared no schema")
        await pilot.press("a")
        assert isinstance(app.screen, PromptScreen)
        assert f"Approve {mw.APPROVAL} of {mw.ASK_ID}?" in dialog(app)
        await pilot.press("escape")
        await pilot.press("r", *"[/]no", "enter")
        await notified(pilot, app, f"rejected {mw.APPROVAL} of {mw.ASK_ID}")
        await until(pilot, lambda: table.row_count == 0)
        app.open_run(mw.ASK_ID)
        await until(pilot, lambda: isinstance(app.screen, DetailScreen))
        await shows(pilot, app, f"#1 {mw.APPROVAL} rejected by", '"[/]no"')
    (decided,) = open_journal(journal_path).approvals(run_id=mw.ASK_ID)
    assert decided.status == "rejected" and decided.comment == "[/]no"


async def test_effects_in_doubt_show_marker_names_as_written(journal_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(HERE / "markup_workflows.py"), str(journal_path), "marker"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr
    app = LilApp(journal_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        table = app.screen.query_one("#effects", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        await shows(pilot, app, mw.MARK_ID, mw.MARKER)
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Mark {mw.MARKER} (position 1 of {mw.MARK_ID}) as done?" in dialog(app)
        await pilot.press("enter")
        # operate.resolve_effect's sentence, the marker and the run id shown as written
        said = f"resolved {mw.MARKER!r} (position 1) of {mw.MARK_ID} as done by"
        await notified(pilot, app, said)
        await until(pilot, lambda: table.row_count == 0)
    assert app.return_code in (None, 0)


async def test_splices_show_reason_path_and_author_as_written(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the file column shows the path from here
    src = mw.splice_file(tmp_path)
    p = propose_splice(
        src,
        "price",
        "def price(x):\n    return x * 3\n",
        reason=mw.REASON,
        by=mw.BY,
        journal=open_journal(journal_path),
    )
    app = LilApp(journal_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        table = app.screen.query_one("#splices", DataTable)
        await until(pilot, lambda: table.row_count == 1)
        # the table (the author's user part) and the diff pane (the reason, the folder)
        await shows(pilot, app, "[bold]agent[/bold]", f"reason: {mw.REASON}", mw.FOLDER)
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Apply {p.id}: replace price in" in dialog(app) and mw.FOLDER in dialog(app)
        await pilot.press("escape")
        await pilot.press("r")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"[@click=app.quit]no[/]", "enter")
        await notified(pilot, app, f"rejected {p.id} (price)")
        await until(pilot, lambda: table.row_count == 0)
    assert app.return_code in (None, 0)
    (after,) = open_journal(journal_path).proposals()
    assert after.state == "rejected" and after.note == "[@click=app.quit]no[/]"


async def test_analytics_show_workflow_and_step_names_as_written(journal_path: Path) -> None:
    _failed(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("5")
        await until(pilot, lambda: app.screen.loaded)
        await shows(pilot, app, mw.FLOW, mw.MODEL, mw.STEP1, mw.STEP2)
        table = app.screen.query_one("#an-slowest", DataTable)
        assert {str(table.get_row_at(i)[0]) for i in range(table.row_count)} >= {
            mw.STEP1,
            mw.STEP2,
        }


def test_every_tui_widget_that_shows_text_comes_from_the_plain_module() -> None:
    """A guard for new screens: labels, statics and tables are made from ``_plain`` (whose
    ``str`` content is never markup), nothing asks for markup, and the app's notifications are
    plain (``PlainNotify``)."""
    import ast

    from letitloop.tui import _plain

    direct = {"Label", "Static", "DataTable", "Log"}
    found = []
    for path in Path(_plain.__file__).parent.glob("*.py"):
        if path.name == "_plain.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name in direct or name == "from_markup":
                    found.append(f"{path.name}:{node.lineno} {name}(…)")
                found += [
                    f"{path.name}:{node.lineno} markup=True"
                    for k in node.keywords
                    if k.arg == "markup" and getattr(k.value, "value", None) is not False
                ]
    assert not found, found
    assert issubclass(LilApp, _plain.PlainNotify)
