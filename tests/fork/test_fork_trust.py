"""A fork's records are read data like any other: a malformed origin is refused when written and
ignored when read, an unauthenticated entry point is never carried into a fork (whose own entry
would then be signed), and ``lil journal copy`` carries forks along."""

from __future__ import annotations

from typing import Any

import pytest

from letitloop import durable, fork_run, step
from letitloop.errors import JournalError, TamperedDataError
from letitloop.journal._copy import copy_journal
from letitloop.journal._fork import forked_from, origin_of
from letitloop.journal._memory import MemoryJournal
from letitloop.journal._records import validate


def _run_record(**fork: Any) -> dict[str, Any]:
    return {
        "k": "run",
        "run": "wf:k",
        "wf": "wf",
        "key": "k",
        "epoch": 0,
        "try": 0,
        "args": None,
        "entry": None,
        "parent": None,
        "by": "me",
        "ts": 1.0,
        "fork": fork,
    }


@pytest.mark.parametrize(
    "fork",
    [
        {"run": "a:b", "pos": -1, "epoch": 0, "step": None},
        {"run": "a:b", "pos": 1, "epoch": "0", "step": None},
        {"run": 7, "pos": 1, "epoch": 0, "step": None},
        {"run": "a\nforged row", "pos": 1, "epoch": 0, "step": None},
        {"run": "a:b", "pos": 1, "epoch": 0, "step": "s", "code": "os.system"},
        {"run": "a:b", "pos": True, "epoch": 0, "step": None},
    ],
)
def test_a_malformed_fork_origin_is_refused(fork: dict[str, Any]) -> None:
    with pytest.raises(JournalError):
        validate(_run_record(**fork))
    journal = MemoryJournal()
    with pytest.raises(JournalError):
        journal.import_records([_run_record(**fork)])
    assert journal.list_runs() == []


def test_a_malformed_origin_read_back_is_no_origin() -> None:
    assert origin_of({"k": "run", "fork": {"run": "a", "pos": "1", "epoch": 0}}) is None
    assert origin_of({"k": "ok", "fork": {"run": "a", "pos": 1, "epoch": 0}}) is None
    assert origin_of({"k": "run", "fork": ["a", 1, 0]}) is None
    assert validate(_run_record(run="a:b", pos=1, epoch=0, step="s"))  # a good one passes


def test_an_unauthenticated_entry_point_is_not_carried_into_a_fork() -> None:
    journal = MemoryJournal()
    forged = {
        "k": "run",
        "run": "evil:1",
        "wf": "evil",
        "key": "1",
        "epoch": 0,
        "try": 1,
        "args": ["json", b"[[], {}]"],
        "entry": "os:system|hmac=" + "00" * 32,  # written by someone without the journal's key
        "parent": None,
        "by": "x",
        "ts": 1.0,
    }
    ok = {"k": "ok", "run": "evil:1", "epoch": 0, "pos": 0, "att": 1, "kind": "step"}
    ok |= {"name": "s", "fp": "f", "codec": "json", "out": b"1", "next": None, "ts": 2.0}
    journal.import_records([forged, ok])
    with pytest.raises(TamperedDataError, match="not authenticated"):
        fork_run("evil:1", 1, journal=journal)
    assert [r.run_id for r in journal.list_runs()] == ["evil:1"]  # nothing was written


def test_journal_copy_carries_forks() -> None:
    source = MemoryJournal()

    @durable(journal=source, name="copy.wf", run_id="r1")
    def wf() -> list[int]:
        return [step(f"s{i}", lambda i: i, i) for i in range(3)]

    wf()
    fork = fork_run("copy.wf:r1", 2, journal=source)
    target = MemoryJournal()
    copy_journal(source, target)
    assert forked_from(target, fork.run_id) == fork.origin
    assert target.get_run(fork.run_id).run.steps_done == 2
