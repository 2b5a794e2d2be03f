"""lil-tui's run detail "fork from here" (Textual Pilot): press f on a step, confirm, and the
fork opens; R runs it in a subprocess, which executes exactly the steps from that one on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from letitloop.journal._fork import ForkOrigin, forked_from
from letitloop.journal.duckdb._client import open_journal
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen
from letitloop.tui._widgets import ConfirmScreen
from tests.helpers import wait_until_async

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


async def _until(pilot: Any, condition: Any, timeout: float = 60.0) -> Any:
    return await wait_until_async(condition, timeout, pause=pilot.pause)


def _plain(static: Any) -> str:
    import io

    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(static.content)
    return console.export_text()


@pytest.fixture
def fork_env(journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished run of fork_workflows.pipeline('ada'), run by a real subprocess; the calls
    file every really executed step writes to."""
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("FORK_CALLS", str(calls))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(HERE)]))
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    monkeypatch.chdir(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", "import fork_workflows; fork_workflows.pipeline('ada')"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(calls.read_text().splitlines()) == 4
    calls.unlink()
    return calls


async def test_fork_from_here_in_the_run_detail(journal_path: Path, fork_env: Path) -> None:
    journal = open_journal(journal_path)
    (source,) = journal.list_runs()
    outputs = [a.preview for a in journal.get_run(source.run_id).attempts]
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        app.open_run(source.run_id)
        detail = await _until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen)
        await _until(pilot, lambda: detail.view is not None and len(detail.view.steps) == 4)
        await pilot.press("up")  # the cursor starts on the last step: up to "review"
        await _until(pilot, lambda: detail.selected_position == 2)
        await pilot.press("f")
        confirm = await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen)
        assert "from step review (position 2)" in confirm.question
        assert "left as it is" in confirm.question
        await pilot.press("escape")  # no: nothing is forked
        await _until(pilot, lambda: app.screen is detail)
        assert len(journal.list_runs()) == 1
        await pilot.press("f")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("enter")
        fork = await _until(
            pilot,
            lambda: (
                isinstance(app.screen, DetailScreen)
                and app.screen.run_id != source.run_id
                and app.screen
            ),
        )
        assert forked_from(journal, fork.run_id) == ForkOrigin(source.run_id, 2, 0, "review")
        await _until(pilot, lambda: fork.view is not None)
        summary = _plain(fork.query_one("#summary", Static))
        assert f"forked from {source.run_id} at review (#2)" in summary
        assert fork_env.exists() is False  # forking ran nothing
        await pilot.press("R")  # resume the fork in a subprocess, as for any run
        await _until(pilot, lambda: app.resumes and app.resumes[-1].process.poll() is not None)
        assert app.resumes[-1].process.returncode == 0, app.resumes[-1].tail()
        await _until(pilot, lambda: fork.view and fork.view.run.status == "completed")
    assert fork_env.read_text().splitlines() == ["review ada", "publish ada"]
    done = journal.get_run(fork.run_id)
    assert [a.preview for a in done.attempts][:2] == outputs[:2]  # reused, byte for byte
    assert journal.get_run(source.run_id).run.status == "completed"
    assert [a.preview for a in journal.get_run(source.run_id).attempts] == outputs
