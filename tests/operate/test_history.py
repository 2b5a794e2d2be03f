"""What operate added for ``lil mcp``: who intervened on a run (``decisions``), a step's whole
output as text (``step_output``), and the journal's ``read_query`` (a row cap; one read-only
statement on PostgreSQL, so ``SELECT 1; DELETE ...`` never deletes)."""

from __future__ import annotations

from typing import Any

import pytest

from letitloop import durable, step
from letitloop.errors import ConfigError, LetItLoopError
from letitloop.journal import MemoryJournal, read_query
from letitloop.operate import cancel_run, decisions, fork, note_started, step_output


def _ran(journal: Any) -> None:
    @durable(journal=journal, name="h.ok", run_id="a")
    def ok() -> int:
        step("big", lambda: {"text": "z" * 5000})
        return int(step("two", lambda: 2))

    ok()


def test_decisions_name_who_acted_in_order() -> None:
    journal = MemoryJournal()
    _ran(journal)
    done = fork(journal, "h.ok:a", "two", by="mcp:claude-code/1.2")
    forked = done.data["fork"]
    note_started(journal, forked, "mcp:claude-code/1.2", "resume")
    cancel_run(journal, forked, by="ana@host", reason="not needed")
    said = [(d.kind, d.by, d.text) for d in decisions(journal, forked)]
    assert said == [
        ("run", "mcp:claude-code/1.2", "forked from h.ok:a at position 1 by mcp:claude-code/1.2"),
        ("restart", "mcp:claude-code/1.2", "restarted by mcp:claude-code/1.2: resume started"),
        ("cancel", "ana@host", "cancelled by ana@host: not needed"),
    ]
    assert decisions(journal, "h.ok:a") == []  # a process starting a run is no decision


def test_step_output_is_text_never_code() -> None:
    journal = MemoryJournal()
    _ran(journal)
    out = step_output(journal, "h.ok:a", 0)
    assert (out.name, out.status, out.codec) == ("big", "completed", "json")
    assert out.text is not None and '"z' in out.text and len(out.text) > 5000
    with pytest.raises(ConfigError, match="no step at position 7") as info:
        step_output(journal, "h.ok:a", 7)
    assert info.value.fix is not None and "0, 1" in info.value.fix
    with pytest.raises(ConfigError, match="no attempt 3"):
        step_output(journal, "h.ok:a", 1, attempt=3)


def test_read_query_caps_rows_and_runs_one_statement(backend_journal: Any) -> None:
    journal = backend_journal
    if isinstance(journal, MemoryJournal):
        with pytest.raises(ConfigError, match="needs a DuckDB or PostgreSQL journal"):
            read_query(journal, "SELECT 1", 10)
        return
    _ran(journal)
    table, more = read_query(journal, "SELECT run_id FROM runs UNION ALL SELECT 'b'", 1)
    assert table.columns == ("run_id",) and len(table.rows) == 1 and more
    # on PostgreSQL, the simple protocol would run all three: the COMMIT ends the read-only
    # transaction and the DELETE runs (letitloop.journal.select does: every step gone)
    with pytest.raises(LetItLoopError):
        read_query(journal, "SELECT 1; COMMIT; DELETE FROM steps", 10)
    with pytest.raises(LetItLoopError):
        read_query(journal, "DELETE FROM steps", 10)
    assert read_query(journal, "SELECT count(*) FROM steps", 10)[0].rows == ((2,),)
