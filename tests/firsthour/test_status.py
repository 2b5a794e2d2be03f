"""Point 6: status that tells the truth: a run's ``updated`` moves with every step."""

from __future__ import annotations

import threading
import time
from typing import Any

from letitloop import durable, step


def test_updated_moves_with_every_step_while_the_run_goes_on(any_journal: Any) -> None:
    go_on = threading.Event()

    @durable(journal=any_journal, name="slow", run_id="s1")
    def slow() -> int:
        step("one", lambda: time.sleep(0.05) or 1)
        step("two", lambda: time.sleep(0.05) or 2)
        go_on.wait(30)
        return 3

    worker = threading.Thread(target=slow, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            run = any_journal.list_runs(workflow="slow")
            attempts = any_journal.get_run("slow:s1").attempts if run else []
            if len([a for a in attempts if a.status == "completed"]) == 2:
                break
            time.sleep(0.02)
        [info] = any_journal.list_runs(workflow="slow")
        ended = max(a.ended or 0 for a in any_journal.get_run("slow:s1").attempts)
        assert info.status == "running"
        assert info.updated >= ended > info.created + 0.09  # the last step, not the start
    finally:
        go_on.set()
        worker.join(30)
