"""First-hour tests run against both journals: in-memory and the real owner process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(params=["memory", "owner"])
def any_journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        from letitloop.journal._memory import MemoryJournal

        yield MemoryJournal()
        return
    path = tmp_path / "journal" / "journal.duckdb"
    from letitloop.journal.duckdb._client import open_journal

    yield open_journal(path)
    from tests.conftest import _kill_owner

    _kill_owner(path)
