"""RunInspector's "Fork from here": open a step, click the button, and the fork reuses the steps
before it; a running run's fork is refused in the widget with the error's message and fix."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from letitloop import durable, open_journal, run_fork, step
from letitloop.journal._fork import ForkOrigin, forked_from
from letitloop.notebook_ext._inspector import RunInspector


def _pipeline(journal: Any, calls: list[str]) -> Any:
    def work(name: str, customer: str) -> str:
        calls.append(name)
        return f"{name}:{customer}:{uuid.uuid4().hex[:8]}"

    @durable(journal=journal, name="widget.pipeline", run_id="w-{customer}")
    def pipeline(customer: str) -> list[str]:
        return [step(n, work, n, customer) for n in ("fetch", "summarize", "review")]

    return pipeline


def test_fork_from_the_opened_step(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    calls: list[str] = []
    pipeline = _pipeline(journal, calls)
    source = pipeline("ada")
    inspector = RunInspector("widget.pipeline:w-ada", journal=journal)
    try:
        assert inspector.fork_button.layout.display == "none"  # nothing opened yet
        inspector.rows.children[1].children[0].click()  # open "summarize" from its row
        assert inspector.fork_button.layout.display is None
        assert inspector.fork_button.description == "Fork from summarize"
        calls.clear()
        inspector.fork_button.click()
        (fork,) = inspector.forks
        assert (
            fork.run_id in inspector.fork_note.value
            and "reuses 1 step" in inspector.fork_note.value
        )
        assert calls == []
        assert forked_from(journal, fork.run_id) == ForkOrigin(
            "widget.pipeline:w-ada", 1, 0, "summarize"
        )
        result = run_fork(fork.run_id, pipeline, journal=journal)
        assert calls == ["summarize", "review"]
        assert result[0] == source[0] and result[1:] != source[1:]
        # by position, with new arguments, from the method
        calls.clear()
        other = inspector.fork(2, args=["bob"])
        assert other.run(pipeline)[:2] == source[:2] and calls == ["review"]
    finally:
        inspector.close()
    assert pipeline("ada") == source  # the original is untouched


def test_forking_a_running_run_is_refused_in_the_widget(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    started, release = threading.Event(), threading.Event()

    def slow(i: int) -> int:
        if i == 1:
            started.set()
            assert release.wait(60)
        return i

    @durable(journal=journal, name="widget.busy", run_id="b1")
    def busy() -> list[int]:
        return [step(f"s{i}", slow, i) for i in range(2)]

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        assert started.wait(60)
        inspector = RunInspector("widget.busy:b1", journal=journal)
        try:
            inspector.show_step(0)
            inspector.fork_button.click()
            note = inspector.fork_note.value
            assert "cannot fork" in note and "being executed by" in note and "fix:" in note
            assert inspector.forks == [] and len(journal.list_runs()) == 1
        finally:
            inspector.close()
    finally:
        release.set()
        worker.join(60)
