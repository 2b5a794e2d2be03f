"""lil-tui's queues screen (``6``) with Textual's Pilot, on a real DuckDB journal and owner: the
queues (depth, running, held, oldest wait, limits, paused), the workers (pid@host, state, runs in
hand, heartbeat age), who holds which run (a worker, or a recoverable run's own caller), the
orphaned runs with their command, and ``p`` pausing the selected queue, as the journal has it."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import DataTable
from tui_helpers import cell, killed, settle, until

from letitloop.journal import QueueItem, QueueSpec, WorkerInfo, open_journal
from letitloop.journal.duckdb._client import OwnerJournal
from letitloop.tui._app import LilApp


def _item(n: int, state: str = "queued") -> QueueItem:
    return QueueItem(f"emb.job:{n}", "emb", "emb.job", str(n), 0, state, time.time(), entry="e")


async def test_the_queues_screen_shows_the_fleet_and_pauses_a_queue(journal_path: Path) -> None:
    killed(journal_path, "quick")  # an orphan: its process died and it is not recoverable
    journal = open_journal(journal_path)
    spec = QueueSpec("emb", concurrency=4, per_worker=2)
    for n in range(3):
        journal.enqueue(spec, _item(n))
    now = time.time()
    worker = WorkerInfo("4242@box/w1", "box", 4242, ("emb",), 2, now, now, 30.0, "running")
    [claimed] = journal.claim(worker, 1)
    caller = OwnerJournal(journal_path)  # another process, executing a recoverable run
    caller.hold(QueueSpec("emb"), _item(9, "held"))
    app = LilApp(journal_path)
    async with app.run_test(size=(200, 45), notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("6")
        await until(pilot, lambda: type(app.screen).__name__ == "QueuesScreen")
        await until(pilot, lambda: app.screen.loaded)
        queues = app.screen.query_one("#qs-queue-table", DataTable)
        row = {c: cell(queues, "emb", c) for c in ("queued", "running", "held", "limits", "state")}
        assert row == {
            "queued": "2",
            "running": "1",
            "held": "1",
            "limits": "4 at once, 2 per worker",
            "state": "active",
        }
        assert cell(queues, "emb", "oldest").endswith(("s", "ms")), cell(queues, "emb", "oldest")
        workers = app.screen.query_one("#qs-worker-table", DataTable)
        assert cell(workers, "4242@box", "state") == "running"
        assert cell(workers, "4242@box", "runs in hand") == "1"
        assert cell(workers, "4242@box", "heartbeat").endswith(" ago")
        held = app.screen.query_one("#qs-held-table", DataTable)
        assert cell(held, claimed.run_id, "held by") == "4242@box"
        by_caller = cell(held, "emb.job:9", "held by")
        assert by_caller == f"{caller.session.split('/')[0]} (its caller)", by_caller
        orphans = app.screen.query_one("#qs-orphan-table", DataTable)
        assert cell(orphans, "etl.quick:q1", "steps") == "1"
        assert "move it to a module" in cell(orphans, "etl.quick:q1", "resume with")
        queues.focus()
        await pilot.press("p")
        await until(pilot, lambda: cell(queues, "emb", "state") == "paused")
        assert any("paused emb" in n.message for n in app._notifications)
    assert [q.paused for q in journal.queues()] == [True]
    caller.close()
