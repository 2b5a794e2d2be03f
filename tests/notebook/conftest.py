"""An in-process IPython shell with the extension loaded, and a journal per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def shell() -> Any:
    from IPython.testing import globalipapp

    ip = globalipapp.start_ipython() or globalipapp.get_ipython()
    ip.run_line_magic("load_ext", "letitloop")
    return ip


class Cells:
    """Run ``%%durable`` cells against this test's journal and count side effects."""

    def __init__(self, shell: Any, journal_path: Path) -> None:
        self.shell = shell
        self.journal_path = journal_path
        self.calls: list[str] = []
        shell.user_ns["calls"] = self.calls

    def run(self, line: str, body: str) -> Any:
        from IPython.utils.capture import capture_output

        with capture_output() as captured:
            result = self.shell.run_cell(f"%%durable {line} --journal {self.journal_path}\n{body}")
        result.captured = captured
        return result


@pytest.fixture
def cells(shell: Any, journal_path: Path) -> Iterator[Cells]:
    yield Cells(shell, journal_path)
