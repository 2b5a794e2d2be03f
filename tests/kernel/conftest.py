"""Run kernel semantics against every Journal backend: in-memory, the real owner process, and
PostgreSQL (a fresh database of the session's throwaway cluster, ``tests/pg_cluster.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(params=["memory", "owner", "postgres"])
def any_journal(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if request.param == "memory":
        from letitloop.journal._memory import MemoryJournal

        yield MemoryJournal()
        return
    if request.param == "postgres":
        from letitloop.journal.postgres._journal import PgJournal

        journal = PgJournal(request.getfixturevalue("pg_dsn"))
        yield journal
        journal.close()
        return
    path = tmp_path / "journal" / "journal.duckdb"
    from letitloop.journal.duckdb._client import open_journal

    yield open_journal(path)
    from tests.conftest import _kill_owner

    _kill_owner(path)
