"""A process that dies while executing a run: subscribers hear ``interrupted`` at once."""

from __future__ import annotations

import os
import signal
import threading

from letitloop import open_journal
from letitloop.journal._contract import EventInfo
from letitloop.journal._memory import MemoryJournal, MemoryStore
from tests.helpers import wait_until

from .conftest import Lab, result_of

TEN = "human_workflows.ten_steps:ten-steps"


def test_killing_the_executing_process_pushes_interrupted(lab: Lab) -> None:
    journal = open_journal(lab.journal_path)
    heard: list[EventInfo] = []
    got = threading.Event()

    def on_events(events: list[EventInfo]) -> None:
        heard.extend(events)
        if any(e.kind == "interrupted" for e in events):
            got.set()

    lab.env["HUMAN_STEP_DELAY"] = "0.3"
    proc = lab.start("ten", "")
    wait_until(lambda: len(lab.names()) >= 2, 30, what="two steps")
    sub = journal.subscribe(on_events, run_id=TEN)
    os.kill(proc.pid, signal.SIGKILL)
    result_of(proc)
    assert got.wait(5), [e.kind for e in heard]
    (event,) = [e for e in heard if e.kind == "interrupted"]
    assert event.run_id == TEN and event.data["by"] == f"{proc.pid}@{os.uname().nodename}"
    assert journal.get_run(TEN).run.status == "interrupted"
    sub.close()


def test_a_finished_process_pushes_nothing_of_the_kind() -> None:
    store = MemoryStore()
    worker, watcher = MemoryJournal(store), MemoryJournal(store)
    heard: list[EventInfo] = []
    watcher.subscribe(heard.extend)
    worker.open_run(run_id="w:1", workflow="w", key="1")
    worker.open_run(run_id="w:2", workflow="w", key="2")
    worker.append(
        [{"k": "done", "run": "w:2", "epoch": 0, "codec": "json", "out": b"1", "ts": 1.0}]
    )
    worker.close()  # as if the process ended: w:1 was running, w:2 had completed
    assert [(e.kind, e.run_id) for e in heard if e.kind == "interrupted"] == [
        ("interrupted", "w:1")
    ]
