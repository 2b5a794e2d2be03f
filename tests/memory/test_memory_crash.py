"""A multi-agent conversation killed with SIGKILL in the middle of a model call, and resumed.

Real processes on a real DuckDB journal (its owner process) and on PostgreSQL. The reference is
the same conversation run once without a kill, in a journal of its own: after the kill and the
resume, the blackboard (the brief, every turn of the thread, the handoffs, each summary) is the
reference's exactly, version by version and byte by byte, and the model calls are the
reference's with one call more, the one in flight when the process died. The kill comes in the
call right after the first summary was written, so the summarizer's call, completed before the
kill, is counted once across the crash.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from letitloop.journal import open_journal
from tests.conftest import _kill_owner
from tests.crash.crash_helpers import Worker

SCRIPT = Path(__file__).resolve().parent / "conversation.py"
RUN = "conversation:otters"


@pytest.fixture
def owners(tmp_path: Path) -> Iterator[None]:
    """The DuckDB journals' owner processes (started by the workers) stop with the test."""
    yield
    for name in ("ref", "crash"):
        _kill_owner(tmp_path / name / "j.duckdb")


def _journals(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    if backend == "duckdb":
        return (str(tmp_path / "ref" / "j.duckdb"), str(tmp_path / "crash" / "j.duckdb"))
    dsn = request.getfixturevalue("pg_dsn")
    sep = "&" if "?" in dsn else "?"
    return (f"{dsn}{sep}schema=lil_ref", f"{dsn}{sep}schema=lil_crash")


def _run(journal: str, log: Path, kill_at: int, tmp_path: Path) -> Worker:
    return Worker(str(SCRIPT), journal, "otters", log, kill_at, stderr_path=tmp_path / "worker.err")


def _board(journal: str) -> list[tuple[Any, ...]]:
    j = open_journal(journal)
    try:
        entries = j.board(RUN, history=True).entries
        return [(e.key, e.version, e.codec, e.output, e.tags, e.pinned, e.by) for e in entries]
    finally:
        if not journal.endswith(".duckdb"):
            j.close()


@pytest.mark.parametrize("backend", ["duckdb", "postgres"])
def test_sigkill_mid_conversation_restores_board_and_thread_without_repeating_calls(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, owners: None
) -> None:
    ref_journal, crash_journal = _journals(backend, tmp_path, request)
    ref_log, crash_log = tmp_path / "ref.log", tmp_path / "crash.log"
    ref = _run(ref_journal, ref_log, 0, tmp_path)
    assert ref.finish(120) == 0 and "DONE" in ref.snapshot(), ref.diagnostics()
    reference = ref_log.read_text().splitlines()
    first_summary = next(i for i, line in enumerate(reference) if line.startswith("summarizer"))
    kill_at = first_summary + 2  # 1-based: the call right after the first summary

    doomed = _run(crash_journal, crash_log, kill_at, tmp_path)
    try:
        assert doomed.wait_prefix("INFLIGHT", 120), doomed.diagnostics()
        assert doomed.sigkill()  # in the middle of a model call
    finally:
        doomed.kill()
    before = crash_log.read_text().splitlines()
    assert len(before) == kill_at and before == reference[:kill_at]
    partial = _board(crash_journal)
    assert 0 < len(partial) < len(_board(ref_journal))  # the conversation was cut in the middle

    resumed = _run(crash_journal, crash_log, 0, tmp_path)
    assert resumed.finish(120) == 0 and "DONE" in resumed.snapshot(), resumed.diagnostics()

    calls = crash_log.read_text().splitlines()
    assert Counter(calls) - Counter(reference) == Counter([reference[kill_at - 1]])
    assert Counter(reference) - Counter(calls) == Counter()  # every call made, once but one
    assert calls[kill_at:] == reference[kill_at - 1 :]  # the in-flight call ran again first
    assert sum(c.startswith("summarizer") for c in calls[:kill_at]) == 1  # before the kill
    assert [c for c in calls if c == reference[first_summary]] == [reference[first_summary]]

    restored, expected = _board(crash_journal), _board(ref_journal)
    assert restored == expected  # every version of every key, byte for byte
    thread = [e for e in restored if e[0] == "thread/review"]
    assert [e[1] for e in thread] == list(range(1, len(thread) + 1)) and len(thread) == 12
    assert sum(e[0].startswith("summary/") for e in restored) >= 2
