"""A run's duration in lil-tui is the time its tries ran, not the time since it was created (a
12 ms run showed 119 s after a later resume)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from letitloop import durable, step
from letitloop.tui._model import Model


def test_a_resumed_runs_duration_is_the_sum_of_its_tries(journal_path: Path) -> None:
    fail = [True]

    def flaky() -> int:
        if fail[0]:
            raise RuntimeError("first try")
        return 1

    @durable(journal=str(journal_path), name="twice", run_id="t1")
    def twice() -> int:
        return step("flaky", flaky)

    with pytest.raises(RuntimeError):
        twice()
    time.sleep(2.0)  # the run waits, failed, for a person: no try is running
    fail[0] = False
    assert twice() == 1

    model = Model(journal_path)
    (run,) = [r for r in model.journal.list_runs(limit=10) if r.workflow == "twice"]
    row = model.run_row(run)
    assert run.updated - run.created >= 2.0
    assert row.seconds < 1.0, (row.seconds, run.active_seconds)
    assert row.duration.endswith("ms"), row.duration
