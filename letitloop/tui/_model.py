"""The TUI's one translation module: journal data in, plain view models (rows, panels) out.

Screens never talk to the journal themselves: they ask a ``Model`` for rows (always from a worker
thread, since a call may wait for an owner to start) and receive ``JournalChanged`` messages fed
by the owner's pushed events (``journal.subscribe``), so nothing polls. Times are rendered by a
``Clock``; a ``FrozenClock`` renders every time and duration the same way, which keeps SVG
snapshots deterministic while the journal itself is built by real workflows.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from textual.message import Message

from letitloop.journal._maps import MapItems, map_items

if TYPE_CHECKING:
    from letitloop.journal._contract import (
        ApprovalInfo,
        AttemptInfo,
        EventInfo,
        Proposal,
        RunDetail,
        RunInfo,
    )
    from letitloop.journal.duckdb._client import OwnerJournal

STATUSES = ("running", "suspended", "failed", "interrupted", "completed", "reset")
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
MAX_PREVIEW = 4000  # characters of an output shown before it is cut
HUGE = 1_000_000
FIRST_PAGE = 200  # runs read first when the app opens, before all of them


class Clock:
    """Wall-clock time and how times and durations are written on screen."""

    def now(self) -> float:
        return time.time()

    def stamp(self, ts: float | None) -> str:
        return time.strftime("%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"

    def short(self, ts: float | None) -> str:
        """A time in at most 11 characters: ``21:04:30`` today, ``12-01 21:04`` before."""
        if not ts:
            return "-"
        if time.localtime(ts)[:3] == time.localtime(self.now())[:3]:
            return time.strftime("%H:%M:%S", time.localtime(ts))
        return time.strftime("%m-%d %H:%M", time.localtime(ts))

    def seconds(self, start: float | None, end: float | None) -> float:
        if not start:
            return 0.0
        return max(0.0, (end or self.now()) - start)

    def span(self, start: float | None, end: float | None) -> str:
        return human_span(self.seconds(start, end)) if start else "-"


class FrozenClock(Clock):
    """Every time shows as one fixed instant and every duration as one second (for snapshots)."""

    def now(self) -> float:
        return 1_767_268_800.0  # 2026-01-01 12:00:00 UTC

    def stamp(self, ts: float | None) -> str:
        return "01-01 12:00:00" if ts else "-"

    def short(self, ts: float | None) -> str:
        return "12:00:00" if ts else "-"

    def seconds(self, start: float | None, end: float | None) -> float:
        return 1.0 if start else 0.0


def human_span(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def usd(micros: int | None) -> str:
    if not micros:
        return "$0"
    return f"${micros / 1e6:.4f}" if micros >= 100 else f"${micros / 1e6:.6f}"


def error_line(error: dict[str, Any] | None) -> str:
    """``Type: message`` of a journaled error, in one line."""
    if not error:
        return ""
    kind = str(error.get("type", "error")).rsplit(".", 1)[-1]
    message = str(error.get("message", "")).strip().splitlines()
    return f"{kind}: {message[0]}" if message else kind


def truncate(text: str, limit: int = MAX_PREVIEW) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit} more characters)"


# -- view models --------------------------------------------------------------------------------


class RunRow(NamedTuple):
    run_id: str
    workflow: str
    status: str
    done: int
    total: int
    current: str
    created: float
    ended: float | None  # None while running
    cost_micros: int
    dead_letter: bool
    clock: Clock  # times are formatted only for the rows on screen (there may be 100,000 runs)
    active: float | None = None  # seconds its tries ran (not the time since it was created)

    @property
    def steps(self) -> str:
        return f"{self.done}/{self.total}"

    @property
    def started(self) -> str:
        return self.clock.stamp(self.created)

    @property
    def duration(self) -> str:
        if self.active is not None and self.ended is not None:
            return self.clock.span(self.created, self.created + self.active)
        return self.clock.span(self.created, self.ended)

    @property
    def seconds(self) -> float:
        if self.active is not None and self.ended is not None:
            return self.clock.seconds(self.created, self.created + self.active)
        return self.clock.seconds(self.created, self.ended)

    @property
    def cost(self) -> str:
        return usd(self.cost_micros)

    def cells(self) -> tuple[str, ...]:
        return (self.workflow, self.run_id, self.status, self.steps, self.current) + (
            self.started,
            self.duration,
            self.cost,
        )

    def matches(self, status: str | None, text: str) -> bool:
        if status and self.status != status:
            return False
        text = text.strip().lower()
        return not text or text in self.run_id.lower() or text in self.workflow.lower()


RUN_COLUMNS = (
    ("workflow", "workflow"),
    ("run", "run id"),
    ("status", "status"),
    ("steps", "steps"),
    ("current", "current step"),
    ("started", "started"),
    ("duration", "duration"),
    ("cost", "cost"),
)
SORT_KEYS: dict[str, Callable[[RunRow], Any]] = {
    "started": lambda r: r.created,
    "status": lambda r: (r.status, -r.created),
    "workflow": lambda r: (r.workflow, -r.created),
    "duration": lambda r: r.seconds,
    "cost": lambda r: r.cost_micros,
}


class StepRow(NamedTuple):
    position: int
    name: str
    kind: str
    status: str
    attempts: int
    duration: str
    seconds: float
    cost: str


@dataclass
class DetailView:
    """Everything the run-detail screen shows about one run."""

    run: RunInfo
    steps: list[StepRow]
    attempts: dict[int, list[AttemptInfo]]
    events: list[EventInfo]
    budget_micros: int | None
    result: str | None
    total: int
    dead_letter: bool = False
    pending_approvals: list[ApprovalInfo] = field(default_factory=list)
    maps: dict[int, MapItems] = field(default_factory=dict)  # step.map items, by position


class EffectRow(NamedTuple):
    run_id: str
    run_status: str
    position: int
    marker: str
    attempt: int
    started: str
    why: str


class ApprovalRow(NamedTuple):
    id: str
    run_id: str
    name: str
    created: str
    deadline: str
    payload: Any
    schema: dict[str, Any] | None
    editable: bool


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
    """Reads the journal and turns records into view models; thread-safe, used from workers."""

    def __init__(
        self,
        journal_path: Path | str | None = None,
        *,
        journal: OwnerJournal | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._journal = journal
        self._path = journal_path
        self._lock = threading.Lock()
        self.clock = clock or Clock()
        self.subscription: Any = None
        self._prefetched: Future[list[RunRow]] | None = None

    @property
    def journal(self) -> OwnerJournal:
        with self._lock:
            if self._journal is None or self._journal.closed:  # closed: stop_owner() in-process
                from letitloop.journal import open_journal
                from letitloop.journal._config import find_location

                # any backend (a DuckDB file's owner, or PostgreSQL): only the contract is used
                found = open_journal(find_location(self._path))
                self._journal = cast("OwnerJournal", found)
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
        if hasattr(journal, "stats"):
            journal.stats()
        else:
            journal.list_runs(limit=1)

    # runs -------------------------------------------------------------------------------------

    def run_row(self, run: RunInfo, total: int | None = None) -> RunRow:
        c = self.clock
        if total is None:
            unfinished = run.status != "completed" and (run.current_step or run.error)
            total = run.steps_done + (1 if unfinished else 0)
        dead = bool(run.error and str(run.error.get("type", "")).endswith("DeadLetteredError"))
        end = run.updated if run.status not in ("running",) else None
        return RunRow(
            run_id=run.run_id,
            workflow=run.workflow,
            status=run.status,
            done=run.steps_done,
            total=total,
            current=run.current_step or ("" if run.status == "completed" else "-"),
            created=run.created,
            ended=end,
            cost_micros=run.cost_micros,
            dead_letter=dead,
            clock=c,
            active=run.active_seconds if end is not None else None,
        )

    def apply(self, row: RunRow | None, events: Sequence[EventInfo]) -> RunRow | None:
        """A run's row moved forward by its new events, without a journal call: what makes the
        runs screen follow a run within milliseconds. Costs and exact counts come with the next
        full read of the run (``runs_by_id``)."""
        for e in events:
            d = e.data
            if row is None:
                if e.kind == "lgwrite":
                    continue  # a node's pending writes may be pushed before its thread's first put
                if e.kind not in ("run", "lgput"):
                    return None  # a run this screen never saw the start of: read it instead
                row = RunRow(
                    run_id=e.run_id,
                    workflow=str(d.get("wf", e.run_id.split(":", 1)[0])),
                    status=str(d.get("status") or "running"),
                    done=int(e.kind == "lgput"),  # a thread's first checkpoint counts
                    total=int(e.kind == "lgput"),
                    current="-",
                    created=e.ts,
                    ended=None,
                    cost_micros=0,
                    dead_letter=False,
                    clock=self.clock,
                )
                continue
            status, current = row.status, row.current
            done, total = row.done, row.total
            if e.kind == "run":
                status = "running"
            elif e.kind == "step" and e.position is not None:
                status, current, total = "running", e.name or "?", max(total, e.position + 1)
            elif e.kind == "ok" and e.position is not None:
                done, total = min(done + 1, max(total, e.position + 1)), max(total, e.position + 1)
            elif e.kind == "done":
                status, current, total = "completed", "", max(total, done)
            elif e.kind == "fail":
                status = "failed"
            elif e.kind == "suspend":
                status = "suspended"
            elif e.kind == "reset":
                status, done, total, current = "reset", 0, 0, "-"
            elif e.kind == "cancel":
                status, current = "cancelled", ""
            elif e.kind == "interrupted":  # its process died (pushed by the owner)
                status = "interrupted"
            elif e.kind == "lgput":  # a LangGraph checkpoint: one more step of the thread
                status, current = str(d.get("status") or status), "checkpoint"
                done += 1
                total = max(total, done)
            elif e.kind == "lgwrite" and d.get("status"):
                status = str(d["status"])
            else:
                continue
            end = None if status == "running" else e.ts
            row = row._replace(
                status=status,
                current=current,
                done=done,
                total=total,
                ended=end,
            )
        return row

    def runs(self) -> list[RunRow]:
        """Every run, newest first."""
        return self._read(HUGE)

    def first_runs(self) -> tuple[list[RunRow], bool]:
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
        first: Future[list[RunRow]] = Future()

        def read() -> None:
            try:
                first.set_result(self._read(FIRST_PAGE))
            except BaseException as exc:  # handed to whoever takes the result
                first.set_exception(exc)

        self._prefetched = first
        threading.Thread(target=read, name="lil-tui-prefetch", daemon=True).start()

    def _read(self, limit: int) -> list[RunRow]:
        return [self.run_row(r) for r in self.journal.list_runs(limit=limit)]

    def runs_by_id(self, run_ids: Iterable[str]) -> list[RunRow]:
        """Fresh rows for the runs that changed (one round trip each)."""
        from letitloop.errors import LetItLoopError

        rows = []
        for run_id in sorted(run_ids):
            try:
                detail = self.journal.get_run(run_id)
            except LetItLoopError as exc:
                if "no run" in str(exc).lower():
                    continue  # garbage-collected meanwhile
                raise
            rows.append(self.run_row(detail.run, total=_positions(detail.attempts)))
        return rows

    # one run ----------------------------------------------------------------------------------

    def detail(self, run_id: str) -> DetailView:
        detail = self.journal.get_run(run_id)
        events = self.journal.events(run_id=run_id, limit=HUGE)
        budget: int | None = None
        for e in events:
            if e.kind == "budget":
                budget = e.data.get("usd_micros")
        return self._detail_view(detail, events, budget)

    def _detail_view(
        self, detail: RunDetail, events: list[EventInfo], budget: int | None
    ) -> DetailView:
        by_pos: dict[int, list[AttemptInfo]] = {}
        for a in detail.attempts:
            by_pos.setdefault(a.position, []).append(a)
        steps = []
        for pos in sorted(by_pos):
            tries = sorted(by_pos[pos], key=lambda a: a.attempt)
            last = tries[-1]
            status = last.status
            if last.kind == "marker" and last.resolution:
                status = f"{status} ({last.resolution})"
            secs = sum(self.clock.seconds(a.started, a.ended) for a in tries)
            steps.append(
                StepRow(
                    position=pos,
                    name=last.name,
                    kind=last.kind,
                    status=status,
                    attempts=len(tries),
                    duration=self.clock.span(tries[0].started, last.ended) if last.ended else "-",
                    seconds=secs,
                    cost=usd(sum(a.cost_micros for a in tries)),
                )
            )
        run = detail.run
        dead = any(
            (last := max(tries, key=lambda a: a.attempt)).error
            and last.error.get("dead")
            and last.resolution != "rearm"
            for tries in by_pos.values()
        )
        return DetailView(
            run=run,
            steps=steps,
            attempts=by_pos,
            events=events,
            budget_micros=budget,
            result=self.result_text(detail),
            total=len(by_pos),
            dead_letter=bool(dead),
            pending_approvals=self.approvals(run_id=run.run_id),
            maps={m.position: m for m in map_items(self.journal, detail)},
        )

    @staticmethod
    def result_text(detail: RunDetail) -> str | None:
        if detail.result is None:
            return None
        from letitloop.journal._preview import preview

        codec, data = detail.result
        if codec == "json":
            try:
                return json.dumps(json.loads(data), indent=2, ensure_ascii=False)
            except ValueError:
                return None
        return preview(codec, data)  # tagged values read like Python, never the envelope

    # effects in doubt -------------------------------------------------------------------------

    def effects(self) -> list[EffectRow]:
        """Markers whose latest attempt started or raised and that nobody resolved, in every run
        that is not completed or running (a running one may simply be inside the block).

        Each candidate run is read from its events (``events(run_id=)``, a few milliseconds)
        rather than ``get_run``, which costs far more on a big journal."""
        rows = []
        for run in self.journal.list_runs(limit=HUGE):
            if run.status in ("completed", "running", "reset"):
                continue
            events = self.journal.events(run_id=run.run_id, limit=HUGE)
            for m in markers_in_doubt(events, run.epoch):
                why = error_line(m["err"]) if m["err"] else "the process stopped inside the block"
                rows.append(
                    EffectRow(
                        run.run_id,
                        run.status,
                        m["pos"],
                        m["name"],
                        m["att"],
                        self.clock.stamp(m["ts"]),
                        why,
                    )
                )
        return rows

    # approvals --------------------------------------------------------------------------------

    def approvals(self, run_id: str | None = None) -> list[ApprovalInfo]:
        """Pending approvals, oldest first (empty with a kernel that has no approvals yet)."""
        fetch = getattr(self.journal, "approvals", None)
        if fetch is None:
            return []
        found = fetch(status="pending", run_id=run_id, limit=HUGE)
        return sorted(found, key=lambda a: (a.created, a.id))

    def approval_rows(self) -> list[ApprovalRow]:
        return [
            ApprovalRow(
                id=a.id,
                run_id=a.run_id,
                name=a.name,
                created=self.clock.short(a.created),
                deadline=self.clock.short(a.deadline) if a.deadline else "none",
                payload=a.payload,
                schema=a.schema,
                editable=a.schema is not None,
            )
            for a in self.approvals()
        ]

    # splices ----------------------------------------------------------------------------------

    def proposals(self) -> list[Proposal]:
        """Proposals still waiting for a person: pending ones and those found in conflict."""
        return [p for p in self.journal.proposals() if p.state in ("pending", "conflict")]


def markers_in_doubt(events: Sequence[EventInfo], epoch: int) -> list[dict[str, Any]]:
    """The markers of one run's epoch whose latest attempt started or raised and was never
    resolved, from the run's events, in position order."""
    latest: dict[int, dict[str, Any]] = {}
    for e in events:
        d = e.data
        if d.get("epoch") != epoch or e.position is None:
            continue
        pos, att = e.position, e.attempt or 0
        if e.kind == "step" and d.get("kind") == "marker":
            if pos not in latest or att >= latest[pos]["att"]:
                latest[pos] = {"pos": pos, "att": att, "name": e.name, "ts": e.ts}
                latest[pos].update(state="started", err=None)
        elif pos in latest and att == latest[pos]["att"]:
            if e.kind == "ok":
                latest[pos]["state"] = "completed"
            elif e.kind == "err":
                latest[pos].update(state="failed", err=d.get("err"))
            elif e.kind == "resolve":
                latest[pos]["state"] = "resolved"
    return [m for _, m in sorted(latest.items()) if m["state"] in ("started", "failed")]


def _positions(attempts: Sequence[AttemptInfo]) -> int:
    return len({a.position for a in attempts})
