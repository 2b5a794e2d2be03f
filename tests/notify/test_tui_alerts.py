"""lil-tui pops up a notification for the events people act on, and reads a wait as text."""

from __future__ import annotations

import asyncio
from pathlib import Path

from letitloop.journal._contract import EventInfo
from letitloop.tui._app import LilApp
from letitloop.tui._events import describe
from tests.helpers import wait_until_async


async def test_a_failed_run_pops_up_in_the_dashboard(journal_path: Path) -> None:
    from letitloop import durable, step
    from letitloop.journal.duckdb._client import open_journal

    journal = open_journal(journal_path)

    def boom() -> None:
        raise ValueError("no")

    @durable(journal=journal, run_id="alert", name="alerting")
    def alerting() -> None:
        step("boom", boom)

    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause(0.5)  # subscribed
        try:
            await asyncio.to_thread(alerting)
        except ValueError:
            pass
        await wait_until_async(
            lambda: any(n.title == "run failed" for n in app._notifications),
            15,
            what=lambda: list(app._notifications),
            pause=pilot.pause,
        )
        (note,) = [n for n in app._notifications if n.title == "run failed"]
        assert "alerting:alert" in note.message and note.severity == "warning"


def test_a_wait_for_capacity_reads_as_a_sentence() -> None:
    data = {"k": "wait", "name": "summarize", "limit": "openai:gpt-4o", "seconds": 2.5, "at": 3}
    e = EventInfo(1, "r", "wait", None, None, "summarize", 0.0, data)
    line = describe(e, {})
    assert line.tag == "waiting"
    assert line.text == "'summarize' waits 2.5 s for capacity of limit openai:gpt-4o"
