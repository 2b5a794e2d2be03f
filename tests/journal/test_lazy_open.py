"""A ``step.map`` item's opening rides with its step's write (``open_run(durable=False)``): the
owner answers before the ``run`` record is synced and writes it with the next acknowledged
write, one fsync for both. An owner that dies in between loses nothing acknowledged: the client
opens the run again on the next owner before it resends the step."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from letitloop import durable, step
from letitloop.distributed import ThreadExecutor
from letitloop.journal.duckdb._client import OwnerJournal, open_journal


def _ok(run_id: str, pos: int) -> dict[str, Any]:
    rec = {"k": "ok", "run": run_id, "epoch": 0, "pos": pos, "att": 1, "kind": "step"}
    return (
        rec
        | {"name": f"s{pos}", "fp": "fp", "ts": time.time(), "codec": "json"}
        | {
            "out": b'"x"',
            "next": None,
        }
    )


def test_a_lazy_opening_is_written_with_the_steps_write(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    assert "lazy_open" in journal.owner_features
    before = journal.stats()
    journal.open_run(run_id="w:lazy", workflow="w", key="lazy", durable=False)
    journal.append([_ok("w:lazy", 0)])
    after = journal.stats()
    assert after["acked"] - before["acked"] == 2  # the run record and the step
    assert after["fsyncs"] - before["fsyncs"] == 1  # in one synced write
    journal.release_run("w:lazy")
    detail = journal.get_run("w:lazy")
    assert detail.run.attempt == 1 and [a.status for a in detail.attempts] == ["completed"]


def test_an_owner_killed_after_a_lazy_opening_loses_nothing(journal_path: Path) -> None:
    """The owner is SIGKILLed right after it answered the lazy open (the run record still held,
    unwritten): the step's write goes to the next owner, which first gets the run opened again
    (it fails with "unknown run" without that)."""
    journal = OwnerJournal(journal_path)
    journal.open_run(run_id="w:killed", workflow="w", key="killed", durable=False)
    pid = journal.owner_pid
    os.kill(pid, signal.SIGKILL)
    journal.append([_ok("w:killed", 0)])  # reconnects, opens the run again, then writes
    assert journal.owner_pid != pid
    journal.release_run("w:killed")
    detail = open_journal(journal_path).get_run("w:killed")
    assert detail.run.attempt == 1  # opened once as far as the journal knows: no extra try
    assert [(a.position, a.status) for a in detail.attempts] == [(0, "completed")]
    journal.close()


def test_map_items_open_lazily_and_their_runs_are_whole(journal_path: Path) -> None:
    journal = open_journal(journal_path)

    @durable(journal=str(journal_path), name="lazy.fan")
    def fan(n: int) -> list[int]:
        return step.map("double", lambda i: 2 * i, range(n), on=ThreadExecutor(2))

    before = journal.stats()
    assert fan(12) == [2 * i for i in range(12)]
    after = journal.stats()
    children = [r for r in journal.list_runs(limit=100) if r.workflow == "lazy.fan.double"]
    assert len(children) == 12
    assert {(r.status, r.attempt, r.steps_done) for r in children} == {("completed", 1, 1)}
    # per item: its opening and step, synced once (the parent's records add a few more)
    assert after["fsyncs"] - before["fsyncs"] < 12 * 2
