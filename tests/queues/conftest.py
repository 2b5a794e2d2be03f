"""Every DuckDB journal a queue test made under its tmp_path has its owner stopped after the
test (workers, callers and ``lil metrics`` start owners that would otherwise idle on)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _stop_owners(tmp_path: Path) -> Iterator[None]:
    yield
    from tests.conftest import _kill_owner

    for journal in tmp_path.glob("**/*.duckdb"):
        _kill_owner(journal)
