"""``MemoryJournal``: the Journal contract in one process's memory, for fast unit tests.

It runs the same state machine as the owner process (``journal._state``), so leases, resends,
conflicts and markers behave identically; only durability and sharing between processes are
missing. Each ``MemoryJournal`` object is one session: two objects over the same ``MemoryStore``
act like two processes.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from letitloop.errors import JournalError, RunLockedError
from letitloop.journal import _approvals, _checkpoints, _rows
from letitloop.journal._contract import (
    ApprovalInfo,
    AttemptInfo,
    BoardView,
    CacheEntry,
    CheckpointRow,
    Encoded,
    EventInfo,
    Notice,
    Proposal,
    RunDetail,
    RunInfo,
    RunState,
)
from letitloop.journal._limits import Buckets
from letitloop.journal._lookup import match_run as match_run  # every backend finds runs so
from letitloop.journal._memory_queues import MemoryQueues
from letitloop.journal._preview import preview
from letitloop.journal._queue_board import QueueBoard
from letitloop.journal._records import (
    CHECKPOINT_KINDS,
    Record,
    budget_record,
    cache_record,
    without_payload,
)
from letitloop.journal._state import (
    JournalState,
    RunEntry,
    holder_label,
    rearm_record,
    reset_record,
    resolve_record,
    run_state,
)
from letitloop.journal._writes import RecordWrites


class MemoryStore:
    """The shared part: state, every record, and subscribers."""

    def __init__(self) -> None:
        self.state = JournalState(inline_limit=1 << 62)
        self.records: list[Record] = []
        self.cond = threading.Condition()
        self.subscribers: list[tuple[str | None, Callable[[list[EventInfo]], None]]] = []
        self.journal_id = "mem-" + uuid.uuid4().hex[:12]
        self.cache: dict[str, CacheEntry] = {}
        self.proposals: dict[str, Proposal] = {}
        self.approvals: dict[str, ApprovalInfo] = {}
        self.checkpoints = _checkpoints.MemoryCheckpoints()
        self.buckets = Buckets()
        self.board = QueueBoard()


class _Sub:
    def __init__(self, store: MemoryStore, item: Any) -> None:
        self.store, self.item = store, item

    def close(self) -> None:
        with self.store.cond:
            if self.item in self.store.subscribers:
                self.store.subscribers.remove(self.item)


def event_info(seq: int, rec: Record) -> EventInfo:
    return EventInfo(
        seq=seq,
        run_id=rec["run"],
        kind=rec["k"],
        position=rec.get("pos"),
        attempt=rec.get("att"),
        name=rec.get("name"),
        ts=rec["ts"],
        data=without_payload(rec),
    )


def entry_info(entry: RunEntry) -> RunInfo:
    status = entry.status
    if status == "running" and entry.holder is None:
        status = "interrupted"
    return RunInfo(
        run_id=entry.run_id,
        workflow=entry.workflow,
        key=entry.key,
        status=status,
        epoch=entry.epoch,
        attempt=entry.tries,
        created=entry.created,
        updated=entry.updated,
        steps_done=entry.steps_done(),
        current_step=entry.current if entry.status == "running" else None,
        holder=holder_label(entry.holder) if entry.holder else None,
        parent=entry.parent,
        error=entry.error,
        cost_micros=entry.cost_micros,
        tokens=entry.tokens,
        saved_micros=entry.saved_micros,
        active_seconds=entry.active_seconds(),
        budget=entry.budget,
        steps_total=len(entry.steps),
    )


class MemoryJournal(RecordWrites, MemoryQueues):
    """See the module docstring."""

    location = ":memory:"

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.store = store or MemoryStore()
        self.journal_id = self.store.journal_id
        self.session = f"{os.getpid()}@{socket.gethostname()}/{uuid.uuid4().hex[:8]}"
        self._invocations: dict[str, str] = {}  # run -> the call holding its lease

    def _write(self, records: Sequence[Record]) -> None:
        """Check and apply under the store's lock, then notify subscribers (caller holds lock)."""
        new = []
        for rec in records:
            if self.store.state.check(rec, self.session):
                self.store.state.apply(rec)
                new.append(rec)
        self._publish(new)

    def _publish(self, records: Sequence[Record]) -> None:
        """Keep applied records and push them to subscribers (caller holds the lock)."""
        st = self.store
        events = []
        for rec in records:
            if rec["k"] in CHECKPOINT_KINDS:
                st.checkpoints.apply(rec)
            elif rec["k"] == "cache":
                st.cache[rec["key"]] = CacheEntry(
                    rec["key"],
                    rec["fn"],
                    rec["ts"],
                    rec["expires"],
                    len(rec["out"]),
                    rec["cost"],
                    rec["codec"],
                    rec["out"],
                )
            elif rec["k"] == "propose":
                st.proposals.setdefault(rec["id"], _proposal(rec))
            elif rec["k"] == "decide" and rec["id"] in st.proposals:
                st.proposals[rec["id"]] = st.proposals[rec["id"]]._replace(
                    state=rec["state"], decided_by=rec["by"], decided_at=rec["ts"], note=rec["note"]
                )
            elif rec.get("ask"):
                st.approvals.setdefault(rec["ask"]["id"], _approvals.info(rec))
            elif rec["k"] == "answer":
                st.approvals[rec["id"]] = _approvals.decided(st.approvals[rec["id"]], rec)
            elif rec["k"] in ("reset", "rewind", "cancel"):
                for aid, row in list(st.approvals.items()):
                    later = rec["k"] != "rewind" or row.position >= rec["pos"]
                    if row.run_id == rec["run"] and row.status == "pending" and later:
                        st.approvals[aid] = row._replace(status="cancelled")
            elif rec["k"] == "uncache":
                st.cache = {k: e for k, e in st.cache.items() if rec["fn"] not in (None, e.fn)}
            st.records.append(rec)
            events.append(event_info(len(st.records), rec))
        st.cond.notify_all()
        for run_filter, callback in list(st.subscribers):
            mine = [e for e in events if run_filter in (None, e.run_id)]
            if mine:
                callback(mine)

    def open_run(
        self,
        *,
        run_id: str,
        workflow: str,
        key: str,
        args: Encoded | None = None,
        entry: str | None = None,
        parent: str | None = None,
        lease: bool = True,
        lock_timeout: float = 0.0,
        reopen: bool = False,
        steps: bool = True,
        durable: bool = True,  # (always durable here)
    ) -> RunState:
        req: dict[str, Any] = {"run": run_id, "wf": workflow, "key": key, "lease": lease}
        req["reopen"] = reopen
        if not steps:
            req["head"] = True
        req.update(args=list(args) if args else None, entry=entry, parent=parent)
        req["inv"] = invocation = uuid.uuid4().hex[:12]  # the lease is this call's alone
        deadline = time.monotonic() + lock_timeout
        with self.store.cond:
            while True:
                try:
                    wire, recs = self.store.state.begin(req, self.session)
                    break
                except RunLockedError:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise
                    self.store.cond.wait(left)
            self._publish(recs)
            if wire is None:
                raise JournalError(f"no run {run_id!r}", run_id=run_id)
            if lease and self.store.state.lease_holder(run_id) == self.session:
                self._invocations[run_id] = invocation
            return run_state(wire)

    def release_run(self, run_id: str) -> None:
        with self.store.cond:
            invocation = self._invocations.pop(run_id, None)
            self.store.state.release(run_id, self.session, invocation)
            self.store.cond.notify_all()

    def append(self, records: Sequence[Record], *, sync: bool = True) -> None:
        with self.store.cond:
            self._write(records)

    def _append_to_run(self, run_id: str, records: list[Record]) -> None:
        self.append(records)

    def import_records(self, records: Sequence[Record]) -> None:
        """Write copied history (``lil journal copy``): checked like an append, without a lease."""
        with self.store.cond:
            new: list[Record] = []
            try:
                for rec in records:
                    if self.store.state.check(rec, None):
                        self.store.state.apply(rec)
                        new.append(rec)
            finally:
                self._publish(new)

    def board(self, run_id: str, *, key: str | None = None, history: bool = False) -> BoardView:
        with self.store.cond:
            entry = self.store.state.runs.get(run_id)
            if entry is None:
                raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
            mine = [
                r
                for r in self.store.records
                if r["k"] == "board"
                and r["run"] == run_id
                and r["epoch"] == entry.epoch
                and key in (None, r["key"])
            ]
            heads = entry.board
        rows = [
            [r["key"], r["ver"], r["codec"], r["out"], r["tags"], r["pinned"], r["by"], r["ts"]]
            for r in mine
            if history or r["ver"] == heads.get(r["key"])
        ]
        rows.sort(key=lambda row: (row[7], row[0], row[1]))
        return _rows.board_view(run_id, entry.epoch, rows[: _rows.BOARD_ROWS])

    def get_output(self, run_id: str, epoch: int, position: int, attempt: int) -> Encoded:
        for rec in reversed(self.store.records):
            if (rec["run"], rec.get("epoch"), rec.get("pos"), rec.get("att")) == (
                run_id,
                epoch,
                position,
                attempt,
            ) and rec["k"] in ("ok", "err"):
                return rec["codec"], rec["out"]
        raise JournalError(f"no output for run {run_id} position {position}", run_id=run_id)

    def list_runs(
        self, *, status: str | None = None, workflow: str | None = None, limit: int = 100
    ) -> list[RunInfo]:
        with self.store.cond:
            infos = [entry_info(e) for e in self.store.state.runs.values()]
            infos += self.store.checkpoints.run_infos()
        infos = [i for i in infos if status in (None, i.status) and workflow in (None, i.workflow)]
        return sorted(infos, key=lambda i: i.updated, reverse=True)[:limit]

    def find_run(self, text: str) -> str:
        return match_run(text, [*self.store.state.runs, *self.store.checkpoints.threads])

    def results(self, run_ids: Sequence[str]) -> dict[str, Encoded]:
        with self.store.cond:
            out: dict[str, Encoded] = {}
            for run_id in run_ids:
                entry = self.store.state.runs.get(run_id)
                if entry is not None and entry.status == "completed" and entry.result:
                    out[run_id] = (entry.result[0], entry.result[1])
            return out

    def get_run(self, run_id: str) -> RunDetail:
        with self.store.cond:
            entry = self.store.state.runs.get(run_id)
            if entry is None and run_id in self.store.checkpoints.threads:
                lg = self.store.checkpoints
                info = next(i for i in lg.run_infos() if i.run_id == run_id)
                return RunDetail(info, lg.attempts(info.key), None)
            if entry is None:
                raise JournalError(f"no run {run_id!r}", run_id=run_id)
            steps: dict[_rows.StepKey, dict[str, Any]] = {}
            for rec in self.store.records:
                if rec["run"] == run_id and rec.get("epoch") == entry.epoch and "pos" in rec:
                    merge_attempt(steps, rec)
            return RunDetail(
                entry_info(entry),
                [attempt_info(key, row) for key, row in sorted(steps.items())],
                entry.result,
                entry.entry,
                (entry.args[0], entry.args[1]) if entry.args else None,
                entry.result_shown,
            )

    def events(
        self, *, after: int = 0, run_id: str | None = None, limit: int = 1000
    ) -> list[EventInfo]:
        with self.store.cond:
            out = [
                event_info(i + 1, r)
                for i, r in enumerate(self.store.records)
                if i + 1 > after and run_id in (None, r["run"])
            ]
        return out[:limit]

    def subscribe(
        self, callback: Callable[[list[EventInfo]], None], *, run_id: str | None = None
    ) -> _Sub:
        item = (run_id, callback)
        with self.store.cond:
            self.store.subscribers.append(item)
        return _Sub(self.store, item)

    def resolve_marker(
        self, run_id: str, marker: str | int, resolution: str, by: str, comment: str | None = None
    ) -> None:
        with self.store.cond:
            entry = self.store.state.runs.get(run_id)
            if entry is None:
                raise JournalError(f"no run {run_id!r}", run_id=run_id)
            self._write([resolve_record(entry, marker, resolution, by, comment)])

    def cache_get(self, key: str) -> CacheEntry | None:
        with self.store.cond:
            return self.store.cache.get(key)

    def cache_put(
        self, key: str, fn: str, encoded: Encoded, cost_micros: int, expires: float | None
    ) -> None:
        self.append([cache_record(key, fn, *encoded, cost_micros, expires)])

    def cache_list(self, limit: int = 100) -> list[CacheEntry]:
        with self.store.cond:
            entries = sorted(self.store.cache.values(), key=lambda e: e.created, reverse=True)
        return [e._replace(codec=None, output=None) for e in entries[:limit]]

    def set_budget(
        self, run_id: str, by: str, *, usd_micros: int | None = None, tokens: int | None = None
    ) -> None:
        with self.store.cond:
            entry = self.store.state.runs.get(run_id)
            if entry is None:
                raise JournalError(f"no run {run_id!r}", run_id=run_id)
            self._write([budget_record(run_id, entry.epoch, usd_micros, tokens, by)])

    def proposals(self, state: str | None = None) -> list[Proposal]:
        with self.store.cond:
            found = list(self.store.proposals.values())
        return [p for p in found if state in (None, p.state)]

    def approvals(
        self, *, status: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> list[ApprovalInfo]:
        with self.store.cond:
            rows = list(self.store.approvals.values())
        rows = [r for r in rows if status in (None, r.status) and run_id in (None, r.run_id)]
        return sorted(rows, key=lambda r: r.created, reverse=True)[:limit]

    def rearm_step(self, run_id: str, by: str, step: str | int | None = None) -> None:
        with self.store.cond:
            entry = self.store.state.runs.get(run_id)
            if entry is None:
                raise JournalError(f"no run {run_id!r}", run_id=run_id)
            self._write([rearm_record(entry, step, by)])

    def reset_run(self, run_id: str, by: str, comment: str | None = None) -> None:
        with self.store.cond:
            entry = self.store.state.runs.get(run_id)
            if entry is None:
                raise JournalError(f"no run {run_id!r}", run_id=run_id)
            self._write([reset_record(entry, by, comment)])

    def gc(self, *, older_than: float, statuses: Sequence[str] = ("completed",)) -> int:
        with self.store.cond:
            doomed = {
                e.run_id
                for e in self.store.state.runs.values()
                if e.status in statuses and e.holder is None and e.updated < older_than
            }
            for run_id in doomed:
                del self.store.state.runs[run_id]
            self.store.records = [r for r in self.store.records if r["run"] not in doomed]
            return len(doomed)

    def checkpoints(
        self,
        *,
        thread_id: str | None = None,
        ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[CheckpointRow]:
        req = {"thread": thread_id, "ns": ns, "cid": checkpoint_id, "before": before}
        with self.store.cond:
            return self.store.checkpoints.query(req | {"filter": filter, "limit": limit})

    # -- shared rate limits: this store's buckets (journal._limits); no outbox in memory ------

    def take_capacity(self, name: str, rpm: int | None, tpm: int | None, tokens: int = 0) -> float:
        with self.store.cond:
            return self.store.buckets.take(name, rpm, tpm, tokens, time.monotonic())

    def adjust_capacity(self, name: str, tokens: int) -> None:
        with self.store.cond:
            self.store.buckets.adjust(name, tokens, time.monotonic())

    def block_capacity(self, name: str, seconds: float) -> None:
        with self.store.cond:
            self.store.buckets.block(name, seconds, time.monotonic())

    def capacity(self) -> list[dict[str, Any]]:
        with self.store.cond:
            return self.store.buckets.snapshot(time.monotonic())

    def notifications(self, *, state: str | None = None, limit: int = 100) -> list[Notice]:
        return []  # a MemoryJournal notifies nobody: it lives and dies with one process

    def retry_notification(self, key: str) -> None:
        raise JournalError(
            f"no notification {key!r}: an in-memory journal keeps no outbox",
            fix="notifications are delivered from a DuckDB or PostgreSQL journal",
        )

    def close(self) -> None:
        with self.store.cond:
            self.store.board.leave_session(self.session)  # as a process that died: see _queues
            freed = self.store.state.release_session(self.session)
            self.store.cond.notify_all()
            gone = [r for r in freed if self.store.state.runs[r].status == "running"]
            seq = len(self.store.records)
            by = holder_label(self.session)
            events = [
                EventInfo(seq, r, "interrupted", None, None, None, time.time(), {"by": by})
                for r in gone
            ]
            for run_filter, callback in list(self.store.subscribers) if events else []:
                mine = [e for e in events if run_filter in (None, e.run_id)]
                if mine:
                    callback(mine)


def merge_attempt(steps: dict[_rows.StepKey, dict[str, Any]], rec: Record) -> None:
    """Fold one step record into its attempt's row (the shared projection, ``journal._rows``;
    errors kept as they are), for run detail views."""
    if rec["k"] == "answer":  # shown by the approvals listing, not as an attempt
        return
    if rec["k"] == "rewind":
        for key, row in steps.items():
            if key[2] >= rec["pos"]:
                row["status"] = "superseded"
        return
    _rows.merge_step(steps, rec, dump=_rows.keep)


def attempt_info(key: _rows.StepKey, row: dict[str, Any]) -> AttemptInfo:
    """An attempt as the contract shows it, from its merged step row."""
    out = row.get("output")
    return AttemptInfo(
        position=key[2],
        attempt=key[3],
        kind=row.get("kind", "step"),
        name=row.get("name", "?"),
        fingerprint=row.get("fingerprint", ""),
        status=row.get("status", "started"),
        started=row.get("started"),
        ended=row.get("ended"),
        codec=row.get("codec"),
        size=row.get("size") or 0,
        error=row.get("error"),
        next_position=row.get("next_position"),
        resolution=row.get("resolution"),
        resolved_by=row.get("resolved_by"),
        preview=preview(row["codec"], out, shown=row.get("shown")) if out is not None else None,
        cost_micros=row.get("cost_micros") or 0,
        tokens_in=row.get("tokens_in") or 0,
        tokens_out=row.get("tokens_out") or 0,
        model=row.get("model"),
        cache=row.get("cache"),
    )


def _proposal(rec: Record) -> Proposal:
    return Proposal(
        rec["id"],
        rec["path"],
        rec["target"],
        rec["code"],
        rec["reason"],
        rec["by"],
        rec["ts"],
        rec["base"],
        rec["old"],
        rec["origin"],
        "pending",
    )
