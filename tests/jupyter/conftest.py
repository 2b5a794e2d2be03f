"""Helpers of the Jupyter tests: this test's journal as the server's, and workflow processes."""

from __future__ import annotations

import functools
import inspect
import subprocess
import sys
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture
def lab_journal(journal_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    yield journal_path


def run_workflow(journal: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one of ``workflows.py``'s workflows in a fresh interpreter, to its end."""
    return subprocess.run(
        [sys.executable, str(HERE / "workflows.py"), str(journal), *args],
        capture_output=True,
        text=True,
        check=check,
        cwd=ROOT,
        timeout=120,
    )


def start_workflow(journal: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "workflows.py"), str(journal), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
    )


def on_server_loop(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test on pytest-jupyter's event loop, where its server and client live
    (pytest-asyncio's auto mode would otherwise run it on a loop of its own, and every request
    would time out)."""

    @functools.wraps(fn)
    def test(*args: Any, jp_asyncio_loop: Any, **kwargs: Any) -> None:
        jp_asyncio_loop.run_until_complete(fn(*args, **kwargs))

    signature = inspect.signature(fn)
    extra = inspect.Parameter("jp_asyncio_loop", inspect.Parameter.KEYWORD_ONLY)
    test.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), extra]
    )
    return test
