"""The TUI's one reading module: the journal in, operate's view models out, for every screen.

Screens never talk to the journal themselves: they ask a ``Model`` for rows (always from a worker
thread, since a call may wait for an owner to start) and receive ``JournalChanged`` messages fed
by the owner's pushed events (``journal.subscribe``), so nothing polls. What a run, a step, a
side effect in doubt or an action *is* comes from ``letitloop.operate``, the rules every surface
shows: a runs row is an ``operate.RunSummary`` (moved forward by pushed events with
``operate.advance``), a run screen an ``operate.RunView``, an effect an ``operate.Doubt``. So
does how a time, a duration or an amount of money is written; the ``Clock`` only says what
"now" is and which times and durations are shown, so that a ``FrozenClock`` keeps SVG snapshots
still while the journal itself is built by real workflows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from textual.message import Message

from letitloop import operate as ops

if TYPE_CHECKING:
    from letitloop.journal import (
        ApprovalInfo,
        AttemptInfo,
        EventInfo,
        Journal,
        MapItems,
        Proposal,
    )

STATUS_STYLE = {
    "running": "bold cyan",
    "completed": "green",
    "failed": "bold red",
    "interrupted": "yellow",
    "suspended": "magenta",
    "reset": "dim",
    "started": "cyan",
    "pending": "bold magenta",
}
MAX_SHOWN = 4000  # characters of an output or a payload shown before it is cut
HUGE = 1 << 30
FIRST_PAGE = 200  # runs read first when the app opens, before all of them
FROZEN = 1_767_268_800.0  # 2026-01-01 12:00:00 UTC: the one instant of a FrozenClock


class Clock:
    """What "now" is, and which time or duration a screen shows for a journaled one. Every time
    and duration is written by operate's rules (``short_time``, ``local_time``, ``duration``)."""

    def now(self) -> float:
        return time.time()

    def at(self, ts: float | None) -> float | None:
        """The time shown for ``ts``."""
        return ts

    def spent(self, seconds: float | None) -> float | None:
        """The duration shown for ``seconds`` (None: unknown, nothing ended)."""
        return seconds

    def time(self, ts: float | None) -> str:
        """A time in a column or a log line: ``21:04:30`` today, ``12-01 21:04`` before."""
        return ops.short_time(self.at(ts), self.now())

    def stamp(self, ts: float | None) -> str:
        """A time in full: ``2026-12-01 21:04:30``."""
        return ops.local_time(self.at(ts))

    def duration(self, seconds: float | None) -> str:
        return ops.duration(self.spent(seconds))


class FrozenClock(Clock):
    """Every time shows as one fixed instant and every known duration as one second, each
    written by the same rules (for snapshots)."""

    def now(self) -> float:
        return FROZEN

    def at(self, ts: float | None) -> float | None:
        return FROZEN if ts else None

    def spent(self, seconds: float | None) -> float | None:
        return None if seconds is None else 1.0


class DetailView(NamedTuple):
    """What the run screen shows: operate's view of the run, and its events for the log."""

    view: ops.RunView
    events: list[EventInfo]

    @property
    def run(self) -> ops.RunSummary:
        return self.view.run

    @property
    def steps(self) -> list[ops.StepSummary]:
        return self.view.steps

    @property
    def total(self) -> int:
        return self.view.run.steps_total

    def tries(self, position: int) -> list[AttemptInfo]:
        """The attempts at ``position``, oldest first."""
        return [a for a in self.view.attempts if a.position == position]

    def items(self, position: int) -> MapItems | None:
        """The ``step.map`` items of the step at ``position``, if it is one."""
        return next((m for m in self.view.maps if m.position == position), None)


# -- Textual messages ---------------------------------------------------------------------------


class JournalChanged(Message):
    """New journal events arrived (pushed by the owner)."""

    def __init__(self, events: list[EventInfo]) -> None:
        super().__init__()
        self.events = events

    @property
    def run_ids(self) -> set[str]:
        return {e.run_id for e in self.events if e.run_id}


class JournalProblem(Message):
    """A journal call failed (owner gone, version skew...): show it, and retry until it works."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error


# -- the model ----------------------------------------------------------------------------------


class Model:
    """Reads the journal (any backend, through its contract) into operate's view models;
    thread-safe, used from workers."""

    def __init__(
        self,
        journal_path: Path | str | None = None,
        *,
        journal: Journal | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._journal = journal
        self._path = journal_path
        self._lock = threading.Lock()
        self.clock = clock or Clock()
        self.subscription: Any = None
        self._prefetched: Future[list[ops.RunSummary]] | None = None

    @property
    def journal(self) -> Journal:
        with self._lock:
            # closed: its owner was stopped in this process (stop_owner): open it again
            if self._journal is None or getattr(self._journal, "closed", False):
                from letitloop.journal import find_location, open_journal

                # any backend (a DuckDB file's owner, or PostgreSQL): only the contract is used
                self._journal = open_journal(find_location(self._path))
            return self._journal

    @property
    def location(self) -> str:
        return self.journal.location

    def subscribe(self, deliver: Callable[[list[EventInfo]], None]) -> None:
        """Push every new journal event to ``deliver`` (called on the subscription's thread)."""
        if self.subscription is None:
            self.subscription = self.journal.subscribe(deliver)

    def close(self) -> None:
        if self.subscription is not None:
            self.subscription.close()
            self.subscription = None

    def check(self) -> None:
        """One cheap round trip: raises while the journal cannot be reached."""
        journal = self.journal
        stats = getattr(journal, "stats", None)  # the owner's, without reading a run
        if stats is not None:
            stats()
        else:
            journal.list_runs(limit=1)

    # runs -------------------------------------------------------------------------------------

    def apply(
        self, row: ops.RunSummary | None, events: Sequence[EventInfo]
    ) -> ops.RunSummary | None:
        """A run's row moved forward by its new events, without a journal call: what makes the
        runs screen follow a run within milliseconds (``operate.advance``). Costs and exact
        counts come with the next full read of the run (``runs_by_id``)."""
        return ops.advance(row, events)

    def runs(self) -> list[ops.RunSummary]:
        """Every run, newest first."""
        return self._read(HUGE)

    def first_runs(self) -> tuple[list[ops.RunSummary], bool]:
        """The newest ``FIRST_PAGE`` runs (the prefetched read if one was started), and whether
        that is all of them; ``runs()`` reads the rest."""
        prefetched, self._prefetched = self._prefetched, None
        rows = prefetched.result() if prefetched is not None else self._read(FIRST_PAGE)
        return rows, len(rows) < FIRST_PAGE

    def prefetch_runs(self) -> None:
        """Start reading the newest ``FIRST_PAGE`` runs now, on a thread, so that the read (and
        the connection to the journal) overlaps Textual's start-up. Every run is read only once
        those are on screen: decoding ten thousand runs on a thread holds the GIL that Textual
        needs to paint the first page."""
        first: Future[list[ops.RunSummary]] = Future()

        def read() -> None:
            try:
                first.set_result(self._read(FIRST_PAGE))
            except BaseException as exc:  # handed to whoever takes the result
                first.set_exception(exc)

        self._prefetched = first
        threading.Thread(target=read, name="lil-tui-prefetch", daemon=True).start()

    def _read(self, limit: int) -> list[ops.RunSummary]:
        # the listing's summaries: waiting approvals are not a column here (one read less)
        return [ops.summarize(r) for r in self.journal.list_runs(limit=limit)]

    def runs_by_id(self, run_ids: Iterable[str]) -> list[ops.RunSummary]:
        """Fresh rows for the runs that changed, exact (one round trip each)."""
        from letitloop.errors import LetItLoopError

        rows = []
        for run_id in sorted(run_ids):
            try:
                detail = self.journal.get_run(run_id)
            except LetItLoopError as exc:
                if "no run" in str(exc).lower():
                    continue  # garbage-collected meanwhile
                raise
            rows.append(ops.summarize(detail.run, detail=detail))
        return rows

    def summary(self, run_id: str) -> ops.RunSummary:
        """One run as it stands now, exact: what a run action is offered by (``actions``)."""
        journal = self.journal
        return ops.summary_of(journal, journal.get_run(run_id))

    # one run ----------------------------------------------------------------------------------

    def detail(self, run_id: str) -> DetailView:
        journal = self.journal
        view = ops.view_of(journal, journal.get_run(run_id))
        return DetailView(view, journal.events(run_id=run_id, limit=HUGE))

    # effects in doubt, approvals, splices -----------------------------------------------------

    def effects(self) -> list[ops.Doubt]:
        """Side effects in doubt across the journal: ``operate.doubts``, the rule every
        surface lists them by."""
        return ops.doubts(self.journal)

    def approvals(self, run_id: str | None = None) -> list[ApprovalInfo]:
        """Pending approvals, oldest first."""
        found = self.journal.approvals(status="pending", run_id=run_id, limit=HUGE)
        return sorted(found, key=lambda a: (a.created, a.id))

    def proposals(self) -> list[Proposal]:
        """Proposals still waiting for a person: pending ones and those found in conflict."""
        return [p for p in self.journal.proposals() if p.state in ("pending", "conflict")]
