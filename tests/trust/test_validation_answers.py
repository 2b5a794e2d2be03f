"""Point 14 of issue 14: the owner checks what the client checks.

An answer record whose edited payload violates the approval's JSON schema used to be refused
only by ``lil``; a client writing the record itself got it accepted, and the run continued with
a payload outside the schema. The owner (and the memory journal) now refuse it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from letitloop import approval, durable, step
from letitloop.errors import LetItLoopError, Suspended

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}},
    "required": ["title"],
}


@pytest.fixture(params=["owner", "memory"])
def any_journal(request: pytest.FixtureRequest, journal_path: Path) -> Any:
    if request.param == "memory":
        from letitloop.journal._memory import MemoryJournal

        return MemoryJournal()
    from letitloop.journal.duckdb._client import open_journal

    return open_journal(journal_path)


def _pending(any_journal: Any) -> Any:
    @durable(journal=any_journal, run_id="publish-1")
    def publish() -> Any:
        draft = step("draft", lambda: {"title": "hello"})
        return approval("publish", draft, schema=SCHEMA, wait=False).payload

    with pytest.raises(Suspended):
        publish()
    (row,) = any_journal.approvals(status="pending")
    return publish, row


def _answer(row: Any, payload: str | None) -> dict[str, Any]:
    """The record a client that skips ``lil``'s check would write."""
    return {
        "k": "answer",
        "run": row.run_id,
        "epoch": row.epoch,
        "pos": row.position,
        "att": row.attempt,
        "id": row.id,
        "ok": True,
        "by": "mallory",
        "comment": None,
        "payload": payload,
        "timeout": False,
        "ts": time.time(),
    }


@pytest.mark.parametrize(
    "payload",
    [json.dumps({"title": ""}), json.dumps({"nope": 1}), json.dumps([1, 2]), "[" * 5000],
    ids=["min-length", "missing-field", "not-an-object", "deeply-nested"],
)
def test_an_answer_outside_the_schema_is_refused_by_the_journal(
    any_journal: Any, payload: str
) -> None:
    publish, row = _pending(any_journal)
    with pytest.raises(LetItLoopError) as info:
        any_journal._append_to_run(row.run_id, [_answer(row, payload)])
    assert "schema" in str(info.value) or "JSON" in str(info.value)
    assert info.value.fix
    (still,) = any_journal.approvals(status="pending")
    assert still.id == row.id  # nothing was decided

    any_journal._append_to_run(row.run_id, [_answer(row, json.dumps({"title": "edited"}))])
    assert publish() == {"title": "edited"}
