"""``operate.advance``: a run's summary folded forward from its events agrees with a full read of
the journal (status, steps done and known, tries, epoch, time running), on the memory journal."""

from __future__ import annotations

from typing import Any

import pytest

from letitloop import durable, step, suspend
from letitloop.errors import Suspended
from letitloop.journal import MemoryJournal
from letitloop.operate import RunSummary, actions_for, advance, summarize


def _read(journal: Any, run_id: str) -> RunSummary:
    return summarize(journal.get_run(run_id).run, detail=journal.get_run(run_id))


def _shown(s: RunSummary | None) -> tuple[Any, ...]:
    assert s is not None
    return (s.status, s.steps_done, s.steps_total, s.epoch, s.attempt, s.current_step, s.actions)


def test_a_run_folded_from_its_events_reads_as_the_journal_says() -> None:
    journal = MemoryJournal()
    fail = [True]

    def flaky() -> int:
        if fail[0]:
            raise RuntimeError("first try")
        return 2

    @durable(journal=journal, name="flow", run_id="f1")
    def flow() -> int:
        return int(step("one", lambda: 1)) + int(step("two", flaky))

    with pytest.raises(RuntimeError):
        flow()
    events = journal.events(run_id="flow:f1")
    failed = advance(None, events)
    assert _shown(failed) == _shown(_read(journal, "flow:f1"))
    assert failed is not None and failed.error and failed.error["message"] == "first try"
    fail[0] = False
    assert flow() == 3
    later = journal.events(run_id="flow:f1", after=events[-1].seq)
    done = advance(failed, later)
    full = _read(journal, "flow:f1")
    assert _shown(done) == _shown(full) == ("completed", 2, 2, 0, 2, None, ("fork",))
    assert done is not None and full.seconds is not None and done.error is None
    # time as the journal counts it: each try from its run record to its last record
    assert done.seconds == pytest.approx(full.seconds, abs=1e-6)
    assert advance(None, later[1:]) is None  # a run whose start was not seen: read it instead


def test_cancel_and_reset_move_a_suspended_run() -> None:
    journal = MemoryJournal()

    @durable(journal=journal, name="pausing", run_id="p")
    def pausing() -> None:
        step("a", lambda: 1)
        suspend("later")

    with pytest.raises(Suspended):
        pausing()
    seen = journal.events(run_id="pausing:p")
    row = advance(None, seen)
    assert _shown(row) == _shown(_read(journal, "pausing:p"))
    journal.set_budget("pausing:p", "ops", usd_micros=5)  # changes nothing a summary shows
    budget = journal.events(run_id="pausing:p", after=seen[-1].seq)
    assert advance(row, budget) is row
    journal.cancel_run("pausing:p", "ops", "no longer needed")
    cancel = [e for e in journal.events(run_id="pausing:p") if e.kind == "cancel"]
    cancelled = advance(row, cancel)
    assert cancelled is not None and cancelled.status == "cancelled"
    assert cancelled.actions == actions_for(cancelled) == ("reset", "fork")
    journal.reset_run("pausing:p", "ops")
    reset = [e for e in journal.events(run_id="pausing:p") if e.kind == "reset"]
    again = advance(cancelled, reset)
    assert _shown(again) == _shown(_read(journal, "pausing:p"))
    assert again is not None and (again.steps_done, again.seconds) == (0, 0.0)
