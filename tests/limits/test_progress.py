"""A ``%%durable`` cell's progress line says when a step waits for a shared limit."""

from __future__ import annotations

from typing import Any

from letitloop import Limit, durable, step
from letitloop.journal._memory import MemoryJournal
from letitloop.notebook_ext._progress import Progress


class Recorded(Progress):
    """The progress line, with every text it would have shown kept."""

    seen: list[str]

    def observe(self, ctx: Any, position: int, name: str, status: str) -> None:
        super().observe(ctx, position, name, status)
        self.seen = [*getattr(self, "seen", []), self.text()]


def test_the_progress_line_shows_a_wait_for_capacity() -> None:
    journal = MemoryJournal()
    limit = Limit("test:progress", rpm=600)
    journal.take_capacity("test:progress", 600, None)  # another process called
    journal.block_capacity("test:progress", 0.6)  # and the provider said: wait 0.6 s

    @durable(journal=journal, run_id="p")
    def cell() -> int:
        return step("ask", int, "7", limit=limit)

    progress = Recorded("cell", shell=None, live=False)
    with Progress.observing(progress):
        assert cell() == 7
    assert any("last: ask (waiting for capacity of test:progress)" in t for t in progress.seen)
    assert progress.done == 1  # the wait is not counted as a step
