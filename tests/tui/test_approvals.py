"""The approvals inbox: approve, reject with a comment, edit a payload under its schema; each
decision checked in the journal and in the workflow that asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tui_workflows as wf
from textual.widgets import DataTable, Static, TextArea
from tui_helpers import HERE, plain, settle, until

from letitloop.errors import ApprovalPending
from letitloop.journal.duckdb._client import open_journal
from letitloop.tui._app import LilApp
from letitloop.tui._widgets import PayloadScreen, PromptScreen

ROOT = HERE.parents[1]


async def test_approve_unblocks_the_waiting_workflow(journal_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "tui_workflows.py"), str(journal_path), "approval"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        app = LilApp(journal_path)
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(app, pilot)
            await pilot.press("2")
            table = app.screen.query_one("#approvals", DataTable)
            await until(pilot, lambda: table.row_count == 1)  # pushed while the app is open
            shown = plain(app.screen.query_one("#payload", Static))
            assert '"title": "Hello"' in shown and "blog.publish:post-1" in shown
            await pilot.press("a")
            assert isinstance(app.screen, PromptScreen)
            await pilot.press(*"ship it", "enter")
            await until(pilot, lambda: table.row_count == 0)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert out.strip() == "posted Hello"
    (decided,) = open_journal(journal_path).approvals(run_id="blog.publish:post-1")
    assert decided.status == "approved" and decided.comment == "ship it"
    assert decided.decided_by and "@" in decided.decided_by


async def test_reject_with_a_comment(journal_path: Path) -> None:
    flow = wf.editable(journal_path)
    with pytest.raises(ApprovalPending):
        flow()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        table = app.screen.query_one("#approvals", DataTable)
        assert table.row_count == 1
        await pilot.press("r", *"too short", "enter")
        await until(pilot, lambda: table.row_count == 0)
    result = flow()
    assert result["approved"] is False
    (decided,) = open_journal(journal_path).approvals(run_id="blog.edit:post-2")
    assert decided.status == "rejected" and decided.comment == "too short"


async def test_edit_the_payload_under_its_schema_and_approve(journal_path: Path) -> None:
    flow = wf.editable(journal_path)
    with pytest.raises(ApprovalPending):
        flow()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("e")
        dialog = app.screen
        assert isinstance(dialog, PayloadScreen)
        editor = dialog.query_one(TextArea)
        editor.text = '{"words": "many"}'  # breaks the schema: refused in the dialog
        await pilot.press("ctrl+s")
        assert app.screen is dialog
        assert "title" in plain(dialog.query_one("#payload-error", Static))
        editor.text = '{"title": "Final title", "words": 150}'
        await pilot.press("ctrl+s")
        table = app.screen.query_one("#approvals", DataTable)
        await until(pilot, lambda: table.row_count == 0)
    result = flow()
    assert result["approved"] is True
    assert result["payload"] == {"title": "Final title", "words": 150}
    (decided,) = open_journal(journal_path).approvals(run_id="blog.edit:post-2")
    assert decided.edited == {"title": "Final title", "words": 150}
