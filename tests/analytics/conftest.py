"""Both journals the analytics run on, filled with the same made-up runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import synthetic

# folding a big import keeps a DuckDB owner busy longer than its reads' default limit (15 s)
os.environ.setdefault("LIL_READ_TIMEOUT", "180")


@pytest.fixture(params=["duckdb", "postgres"])
def filled(request: pytest.FixtureRequest) -> tuple[Any, list[dict[str, Any]]]:
    """(journal, the records imported into it): a real DuckDB file served by its owner, or a
    fresh database on the session's PostgreSQL server."""
    from letitloop.journal import open_journal

    if request.param == "duckdb":
        journal = open_journal(request.getfixturevalue("journal_path"))
    else:
        journal = open_journal(request.getfixturevalue("pg_dsn"))
    return journal, synthetic.fill(journal)
