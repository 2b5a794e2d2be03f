"""RunInspector shows a run's budget and the time its tries ran (issue 15, point 6)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from letitloop import Budget, BudgetExceeded, durable, open_journal, record_cost, step
from letitloop.notebook_ext._inspector import RunInspector


def test_the_inspector_shows_the_budget_and_the_time_its_tries_ran(journal_path: Path) -> None:
    def priced() -> int:
        record_cost(0.2)
        return 1

    @durable(journal=str(journal_path), name="inspect.budget", run_id="b1", budget=Budget(usd=0.1))
    def spend() -> int:
        step("one", priced)
        return step("two", priced)

    with pytest.raises(BudgetExceeded):
        spend()
    journal = open_journal(journal_path)
    journal.set_budget("inspect.budget:b1", "ana@lab", usd_micros=500_000)
    time.sleep(1.2)  # waiting for the raise is not time the run ran
    assert spend() == 1
    inspector = RunInspector("inspect.budget:b1", journal=journal)
    try:
        header = inspector.header.value
    finally:
        inspector.close()
    assert "$0.40 of $0.50 budget" in header, header
    assert re.search(r" · ran \d+ms · ", header), header  # not the 1.2 s it waited
