"""Helpers of the TUI tests: wait for the app, read its widgets."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import wait_until_async

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


async def settle(app: Any, pilot: Any) -> None:
    """Let loading workers finish and their results reach the screen."""
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def until(pilot: Any, condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Wait (letting the app run) until ``condition()`` is true; fail after ``timeout``."""
    return await wait_until_async(condition, timeout, interval=0.02, pause=pilot.pause)


def cell(table: Any, row_key: str, column: str) -> str:
    return str(table.get_cell(row_key, column))


def plain(static: Any, width: int = 200) -> str:
    """The text a Static shows, with any Rich renderable rendered to plain text."""
    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO())
    console.print(static.content)
    return console.export_text()


def in_doubt(journal_path: Path, sent: Path) -> None:
    """Run the notifier in a subprocess that SIGKILLs itself inside its marker block."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "tui_workflows.py"), str(journal_path), "killed", str(sent)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -9, proc.stderr


def killed(journal_path: Path, what: str) -> None:
    """Run workflow ``what`` of tui_workflows.py in a subprocess that SIGKILLs itself."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "tui_workflows.py"), str(journal_path), what],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr
