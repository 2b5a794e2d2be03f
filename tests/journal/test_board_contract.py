"""The blackboard's part of the Journal contract, on every backend (in-memory, the DuckDB owner,
PostgreSQL): versions counted by the journal, compare-and-swap between sessions (two sessions
are two processes), resends dropped, heads rebuilt after a restart, a reset starting it over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from letitloop.errors import BoardConflictError, JournalError
from tests.journal.test_contract import backend, ok, start, step

__all__ = ["backend"]  # the fixture, used by name


def put(j: Any, key: str, version: int, value: bytes = b'"v"', by: str = "a", **kw: Any) -> None:
    j.board_put("wf:a", kw.pop("epoch", 0), key, ("json", value), version=version, by=by, **kw)


def test_versions_are_compared_and_swapped_between_sessions(backend: Any) -> None:
    a, b = backend(), backend()
    start(a)
    a.append([step("wf:a", 0), ok("wf:a", 0)])
    put(b, "plan", 1, b'"outline"', by="b", tags=["plan", "draft"])  # b does not hold the run
    put(a, "plan", 2, b'"outline v2"', by="a", pinned=True)
    with pytest.raises(BoardConflictError) as lost:  # b wrote from version 1: a was first
        put(b, "plan", 2, b'"b\'s v2"', by="b")
    assert (lost.value.key, lost.value.expected, lost.value.current) == ("plan", 1, 2)
    assert "expect=2" in str(lost.value.fix) and lost.value.run_id == "wf:a"
    with pytest.raises(BoardConflictError):  # a version from nowhere is refused too
        put(a, "facts", 3)
    put(a, "plan", 2, b'"outline v2"', by="a", pinned=True)  # a's own resend: dropped, no error
    put(b, "facts", 1, b"[1, 2]", by="b", tags=["facts"])

    heads = b.board("wf:a").entries
    assert [(e.key, e.version, e.output) for e in heads] == [
        ("plan", 2, b'"outline v2"'),
        ("facts", 1, b"[1, 2]"),
    ]
    assert heads[0].pinned and heads[0].by == "a" and heads[0].tags == ()
    history = a.board("wf:a", key="plan", history=True)
    assert history.epoch == 0
    assert [(e.version, e.tags, e.by) for e in history.entries] == [
        (1, ("plan", "draft"), "b"),
        (2, (), "a"),
    ]
    assert [e.key for e in a.board("wf:a", key="facts").entries] == ["facts"]
    assert a.board("wf:a", key="nothing").entries == []
    kinds = [e.kind for e in a.events(run_id="wf:a")]
    assert kinds.count("board") == 3  # the resend wrote nothing


def test_heads_survive_a_restart_and_a_reset_starts_over(backend: Any, tmp_path: Path) -> None:
    a = backend()
    start(a)
    for version in (1, 2, 3):
        put(a, "thread/team", version, f'"turn {version}"'.encode())
    a.release_run("wf:a")
    a.close()
    restarted = tmp_path / "journal" / "journal.duckdb"
    if restarted.exists():  # the DuckDB owner: stop it, so a new one loads the run from disk
        from tests.conftest import _kill_owner

        _kill_owner(restarted)
    b = backend()
    with pytest.raises(BoardConflictError) as lost:  # the versions came back with the run
        put(b, "thread/team", 3, by="b")
    assert lost.value.current == 3
    put(b, "thread/team", 4, b'"turn 4"', by="b")
    assert [e.version for e in b.board("wf:a", history=True).entries] == [1, 2, 3, 4]

    b.reset_run("wf:a", "ops")
    with pytest.raises(JournalError, match="reset"):  # a write of the old epoch is refused
        put(b, "thread/team", 5, by="b")
    assert b.board("wf:a").entries == [] and b.board("wf:a").epoch == 1
    put(b, "thread/team", 1, b'"again"', by="b", epoch=1)
    assert [(e.version, e.output) for e in b.board("wf:a").entries] == [(1, b'"again"')]


def test_bad_writes_and_unknown_runs_are_refused(backend: Any) -> None:
    a = backend()
    start(a)
    with pytest.raises(JournalError, match="tags"):
        put(a, "plan", 1, tags=["x"] * 40)
    with pytest.raises(JournalError, match="printable"):
        put(a, "plan\n", 1)
    with pytest.raises(JournalError, match="no run"):
        a.board("wf:nobody")
    with pytest.raises(JournalError, match="unknown run"):
        a.board_put("wf:nobody", 0, "k", ("json", b"1"), version=1, by="a")
