"""The queues screen (``6``): queued runs and who runs them, from operate's queue, worker and
orphan summaries (what ``lil queue list`` prints).

Four tables: each queue (queued, running, held by their callers, the oldest wait, its limits,
paused or active); each worker (``pid@host``, state, runs in hand, the age of its heartbeat,
its queues); which worker (or caller process) holds which run; and the orphaned runs no worker
takes over, with the command that resumes each. Queue changes are not journal events and
heartbeats are not either, so the screen reads again every ``REFRESH`` seconds while shown
(and when runs end). ``p`` pauses or resumes the selected queue; enter opens a run.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Header

from letitloop import operate as ops
from letitloop.tui._model import JournalChanged
from letitloop.tui._plain import PlainLabel, cell, column_table
from letitloop.tui._widgets import JournalScreen

REFRESH = 2.0  # seconds between reads while the screen is shown (heartbeats age, claims move)
_KINDS = {"done", "fail", "run", "cancel"}  # events that change what runs where


class Fleet(NamedTuple):
    """What the screen shows, read at once on a worker thread."""

    queues: list[ops.QueueSummary]
    workers: list[ops.WorkerSummary]
    held: list[tuple[str, str, str, str]]  # (run, queue, holder, held since)
    orphans: list[ops.OrphanSummary]


class QueuesScreen(JournalScreen):
    """Queues, workers, who holds which run, and orphans."""

    DEFAULT_CSS = """
    QueuesScreen .qs-title { color: $accent; text-style: bold; padding: 0 1; }
    QueuesScreen #qs-top { height: 1fr; }
    QueuesScreen #qs-bottom { height: 1fr; }
    QueuesScreen #qs-queues, QueuesScreen #qs-held { width: 1fr; }
    QueuesScreen #qs-workers, QueuesScreen #qs-orphans { width: 1fr; }
    QueuesScreen DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pause", "Pause/resume"),
        Binding("enter", "open", "Open run", show=False),
        Binding("r", "reread", "Reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.fleet = Fleet([], [], [], [])

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="qs-top"):
            with Vertical(id="qs-queues"):
                yield PlainLabel("Queues", classes="qs-title")
                yield column_table(
                    "qs-queue-table",
                    "queue",
                    "queued",
                    "running",
                    "held",
                    "oldest",
                    "limits",
                    "state",
                )
            with Vertical(id="qs-workers"):
                yield PlainLabel("Workers", classes="qs-title")
                yield column_table(
                    "qs-worker-table", "worker", "state", "runs in hand", "heartbeat", "queues"
                )
        with Horizontal(id="qs-bottom"):
            with Vertical(id="qs-held"):
                yield PlainLabel("Who holds which run", classes="qs-title")
                yield column_table("qs-held-table", "run", "queue", "held by", "since")
            with Vertical(id="qs-orphans"):
                yield PlainLabel("Orphaned runs: no worker takes them over", classes="qs-title")
                yield column_table("qs-orphan-table", "run", "steps", "idle", "resume with")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "queues"
        super().on_mount()
        self.set_interval(REFRESH, self._tick)

    def _tick(self) -> None:
        if self.is_current:
            self.reload()

    def fetch(self) -> Fleet:
        journal = self.model.journal
        queues = ops.queue_summaries(journal)
        workers = ops.worker_summaries(journal)
        held = []
        for state in ("claimed", "held"):
            for i in journal.queue_items(state=state, limit=500):
                who = ops.item_json(i)["claimed_by"] or "-"
                if state == "held":
                    who = f"{who} (its caller)"
                held.append((i.run_id, i.queue, who, ops.ago(i.claimed_at)))
        return Fleet(queues, workers, held, ops.orphan_summaries(journal))

    def show(self, data: Fleet) -> None:
        self.fleet = data
        _fill(self.query_one("#qs-queue-table", DataTable), [_queue_row(q) for q in data.queues])
        _fill(self.query_one("#qs-worker-table", DataTable), [_worker_row(w) for w in data.workers])
        _fill(
            self.query_one("#qs-held-table", DataTable),
            [(run, (cell(run), cell(q), cell(who), since)) for run, q, who, since in data.held],
        )
        _fill(
            self.query_one("#qs-orphan-table", DataTable),
            [_orphan_row(o) for o in data.orphans],
        )
        self.sub_title = (
            f"queues · {len(data.queues)} queues, {len(data.workers)} workers, "
            f"{len(data.orphans)} orphans"
        )

    def wants(self, message: JournalChanged) -> bool:
        return any(e.kind in _KINDS for e in message.events)

    def action_reread(self) -> None:
        self.reload()

    def action_pause(self) -> None:
        """Pause the selected queue (workers take none of its runs), or resume it."""
        table = self.query_one("#qs-queue-table", DataTable)
        if table.row_count == 0:
            self.lil.refused(ValueError("no queue to pause: nothing was enqueued yet"))
            return
        name = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        paused = next((q.paused for q in self.fleet.queues if q.name == name), False)
        self._pause(name, not paused)

    def _pause(self, name: str, paused: bool) -> None:
        from letitloop.errors import LetItLoopError

        try:
            outcome = ops.pause_queue(self.model.journal, name, paused=paused)
        except LetItLoopError as exc:
            self.lil.refused(exc)
            return
        self.notify(outcome.message, title="queue")
        self.reload()

    def action_open(self) -> None:
        """Open the run selected in the held or orphans table."""
        focused = self.focused
        tables = ("qs-held-table", "qs-orphan-table")
        if isinstance(focused, DataTable) and focused.id in tables and focused.row_count:
            key = focused.coordinate_to_cell_key(focused.cursor_coordinate).row_key
            self.lil.open_run(str(key.value))


Row = tuple[str, tuple[Any, ...]]  # a row's key and its cells


def _queue_row(q: ops.QueueSummary) -> Row:
    oldest = ops.duration(q.oldest_age) if q.oldest_age is not None else "-"
    state = cell("paused", "yellow") if q.paused else cell("active", "green")
    counts = (str(q.queued), str(q.running), str(q.info.held))
    return q.name, (cell(q.name, "bold"), *counts, oldest, cell(q.limits), state)


def _worker_row(w: ops.WorkerSummary) -> Row:
    state = cell(w.state, "red" if w.state == "lapsed" else "")
    beat = f"{ops.duration(w.heartbeat_age)} ago"
    queues = cell(", ".join(w.queues) or "all")
    return w.worker, (cell(w.worker, "bold"), state, str(len(w.runs)), beat, queues)


def _orphan_row(o: ops.OrphanSummary) -> Row:
    idle = ops.duration(o.idle)
    return o.run_id, (cell(o.run_id, "bold"), str(o.steps_done), idle, cell(o.command))


def _fill(table: DataTable[Any], rows: list[Row]) -> None:
    """Replace the rows, keyed (so the cursor stays on the same row across reads)."""
    at = table.cursor_row
    table.clear()
    for key, row in rows:
        table.add_row(*row, key=key)
    if rows:
        table.move_cursor(row=min(at, len(rows) - 1))
