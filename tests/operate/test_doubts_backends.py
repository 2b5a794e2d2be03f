"""``operate.doubts`` on every backend (memory, DuckDB owner, PostgreSQL): the same side effects
in doubt, and only the runs that journaled a marker are read in full."""

from __future__ import annotations

from typing import Any

import pytest

from letitloop import atomic_marker, durable, step
from letitloop.operate import doubts


class Counting:
    """A journal whose full reads of a run are counted (everything else passes through)."""

    def __init__(self, journal: Any) -> None:
        self.journal, self.read = journal, []

    def get_run(self, run_id: str) -> Any:
        self.read.append(run_id)
        return self.journal.get_run(run_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.journal, name)


def test_doubts_are_the_same_on_every_backend_and_read_only_runs_with_markers(
    any_journal: Any,
) -> None:
    @durable(journal=any_journal, name="effect", run_id="b")
    def effect() -> None:
        step("prepare", lambda: 1)
        with atomic_marker("send") as go:
            if go:
                raise ConnectionError("timed out after sending")

    @durable(journal=any_journal, name="plain", run_id="c")
    def plain() -> None:
        step("one", lambda: 1)
        raise ValueError("no marker here")

    @durable(journal=any_journal, name="done", run_id="d")
    def done() -> None:
        with atomic_marker("sent"):
            pass

    for flow, error in ((effect, ConnectionError), (plain, ValueError)):
        with pytest.raises(error):
            flow()
    done()
    counting = Counting(any_journal)
    found = doubts(counting)  # type: ignore[arg-type]
    assert [(d.run_id, d.marker, d.status) for d in found] == [("effect:b", "send", "failed")]
    assert found[0].why == "ConnectionError: timed out after sending"
    assert counting.read == ["effect:b"]  # the failed run without a marker: its events only
    any_journal.resolve_marker("effect:b", "send", "done", "ana")
    assert doubts(any_journal) == []
