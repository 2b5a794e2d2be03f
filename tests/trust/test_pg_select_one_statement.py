"""The report's SQL path on PostgreSQL (``letitloop.journal.select``) runs exactly one
statement, read-only: a statement smuggled behind a ``;`` is refused, never executed (it used
the simple query protocol, where ``SELECT 1; COMMIT; DELETE FROM steps`` deleted every step)."""

from __future__ import annotations

import pytest

from letitloop import durable, step
from letitloop.journal import open_journal, select


def test_select_runs_one_read_only_statement(pg_dsn: str) -> None:
    journal = open_journal(pg_dsn)

    @durable(journal=journal, name="sel", run_id="s1")
    def flow() -> int:
        return int(step("one", lambda: 1)) + int(step("two", lambda: 2))

    assert flow() == 3
    before = select(journal, "SELECT count(*) AS n FROM steps").rows
    assert before == ((2,),)
    with pytest.raises(Exception, match=r"(?i)multiple commands|prepared statement"):
        select(journal, "SELECT 1; COMMIT; DELETE FROM steps")
    with pytest.raises(Exception, match=r"(?i)read-only"):
        select(journal, "DELETE FROM steps")
    assert select(journal, "SELECT count(*) AS n FROM steps").rows == before
