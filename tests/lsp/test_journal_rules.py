"""lil lsp's journal diagnostics and lenses follow operate's rules (issue 36): LIL103 is exactly
the run's side effects in doubt (``operate.doubts_of``), and times, durations and money read as
on every surface. Real workflows on a real DuckDB journal; the server's pure functions."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from letitloop import atomic_marker, durable, step
from letitloop.lsp._analysis import analyze
from letitloop.lsp._journal_view import JournalView, function_lens_title, journal_findings
from letitloop.operate import ago, doubts, money

# the cell as it reads in the editor now: "draft" came in before the marker
EDITED = """
from letitloop import atomic_marker, durable, step


@durable(name="cells.report", run_id="r1", on_change="rerun")
def report():
    step("load", load)
    step("draft", draft)
    with atomic_marker("send_report") as go:
        if go:
            send()
    step("ship", ship)
"""


def _closed() -> None:
    raise RuntimeError("the warehouse is closed")


def _failed_inside_the_marker(journal_path: Path) -> None:
    @durable(journal=journal_path, name="cells.report", run_id="r1", on_change="rerun")
    def report() -> None:
        step("load", lambda: 1)
        with atomic_marker("send_report") as go:
            if go:
                raise ConnectionError("smtp timed out after sending")

    with pytest.raises(ConnectionError):
        report()


def _edited_and_failed_later(journal_path: Path) -> None:
    """The code changed at position 1: the marker's attempt there is superseded, the marker runs
    (and completes) at position 2, and the run fails after it."""

    @durable(journal=journal_path, name="cells.report", run_id="r1", on_change="rerun")
    def report() -> None:
        step("load", lambda: 1)
        step("draft", lambda: "draft")
        with atomic_marker("send_report") as go:
            if go:
                pass
        step("ship", _closed)

    with pytest.raises(RuntimeError, match="warehouse"):
        report()


def _findings(journal_path: Path) -> tuple[list[Any], Any]:
    (fn,) = analyze(EDITED).functions
    view = JournalView(str(journal_path), lambda runs: None)
    try:
        state = view.state("report.py", fn)
        return journal_findings(state, fn), state
    finally:
        view.close()


def test_lil103_is_exactly_the_side_effects_in_doubt(journal_path: Path) -> None:
    from letitloop.journal import open_journal

    _failed_inside_the_marker(journal_path)
    found, state = _findings(journal_path)
    (doubt,) = doubts(open_journal(journal_path))
    (lil103,) = [f for f in found if f.code == "LIL103"]
    assert f"`{doubt.run_id}`" in lil103.message and "`send_report`" in lil103.message
    command = lil103.message.split("Decide with `")[1].split("`")[0]
    assert shlex.split(command)[:5] == ["lil", "effects", "resolve", doubt.run_id, doubt.ref]

    _edited_and_failed_later(journal_path)
    journal = open_journal(journal_path)
    marker = [a for a in journal.get_run("cells.report:r1").attempts if a.kind == "marker"]
    assert [(a.position, a.status) for a in marker] == [(1, "superseded"), (2, "completed")]
    assert doubts(journal) == []
    found, state = _findings(journal_path)
    assert [f.code for f in found] == ["LIL101"]  # failed at ship; nothing in doubt
    run = state.runs[0]
    assert run.status == "failed" and "resume" in run.actions
    title = function_lens_title(state, now=run.updated + 150)
    assert title == f"lil: 1 run · last failed {ago(run.updated, run.updated + 150)} · $0"
    assert title.endswith(f"2m ago · {money(run.cost_micros)}")
