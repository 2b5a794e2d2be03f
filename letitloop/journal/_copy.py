"""Copy a journal to another backend (``lil journal copy``): DuckDB to PostgreSQL and back.

The copy goes through the ``Journal`` contract only, so it works between any two backends. It
reads the source's records in order (``events``: every record without its payload), puts each
payload back from the reads that return it (``get_output``, ``get_run``, ``cache_get``,
``checkpoints``) and writes the records to the destination with ``import_records``, where the
destination's own state machine checks and folds them exactly as it folded the originals. So
runs, attempts, outputs, approvals, budgets, markers, cache entries, proposals, blackboards and
LangGraph checkpoints come out the same, with their original times and authors.

What no read of the contract returns cannot be copied, and the report counts it: the result of
an epoch a reset superseded, cache entries replaced or dropped since, and checkpoints deleted
since (their records are then left out; what they changed was undone later anyway). The
source's HMAC key (kept outside the journal) is copied to the destination's key file, so
authenticated outputs still load there (``carry_key``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from letitloop.errors import JournalError
from letitloop.journal._contract import CheckpointRow, CheckpointWrite, Journal, RunDetail
from letitloop.journal._records import JOURNAL_KINDS, Record

_MAX_GROUP_RECORDS = 500  # records per destination write
_MAX_GROUP_BYTES = 32 << 20  # payload bytes per destination write (well under any frame limit)


@dataclass(frozen=True)
class CopyOptions:
    """How a copy reads and writes: events per read, and whether a non-empty target is allowed."""

    page: int = 1000
    into_non_empty: bool = False  # refuse by default: a copy appends, it does not merge


@dataclass
class CopyReport:
    """What a copy did: records written, what they held, and what could not be copied."""

    records: int = 0
    runs: int = 0
    threads: int = 0
    approvals: int = 0
    cache_entries: int = 0
    proposals: int = 0
    left_out: dict[str, int] = field(default_factory=dict)
    key: str = "none"  # what carry_key did with the source's HMAC key

    def leave_out(self, why: str) -> None:
        self.left_out[why] = self.left_out.get(why, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "runs": self.runs,
            "threads": self.threads,
            "approvals": self.approvals,
            "cache_entries": self.cache_entries,
            "proposals": self.proposals,
            "left_out": dict(self.left_out),
            "key": self.key,
        }


def history_groups(records: Sequence[Record]) -> Iterator[tuple[str | None, list[Record]]]:
    """Consecutive records of one run (or of the journal: cache, proposals, checkpoints), in
    bounded groups, each with the run it belongs to (None for journal-wide records)."""
    group: list[Record] = []
    current: str | None = None
    size = 0
    for rec in records:
        run: str | None = None if rec["k"] in JOURNAL_KINDS else rec["run"]
        weight = (
            len(rec.get("out") or b"") + len(rec.get("cp") or b"") + len(rec.get("meta") or b"")
        )
        weight += sum(len(w[3]) for w in rec.get("writes") or [])
        full = len(group) >= _MAX_GROUP_RECORDS or size + weight > _MAX_GROUP_BYTES
        if group and (run != current or full):
            yield current, group
            group, size = [], 0
        current = run
        group.append(rec)
        size += weight
    if group:
        yield current, group


class _Payloads:
    """Puts back the payload fields ``events`` leaves out, reading them from the source."""

    def __init__(self, source: Journal) -> None:
        self.source = source
        self._details: dict[str, RunDetail] = {}
        self._rows: dict[tuple[str, str, str], CheckpointRow] | None = None
        self._by_id: dict[tuple[str, str], CheckpointRow] = {}

    def detail(self, run_id: str) -> RunDetail:
        if run_id not in self._details:
            self._details[run_id] = self.source.get_run(run_id)
        return self._details[run_id]

    def checkpoint(self, thread: str, ns: str, cid: str) -> CheckpointRow | None:
        """The row as the source keeps it now, or the same checkpoint copied to another thread
        (``lgcopy``) if this thread's was deleted since."""
        if self._rows is None:
            rows = self.source.checkpoints()
            self._rows = {(r.thread_id, r.ns, r.checkpoint_id): r for r in rows}
            for r in rows:
                self._by_id.setdefault((r.ns, r.checkpoint_id), r)
        return self._rows.get((thread, ns, cid)) or self._by_id.get((ns, cid))

    def fill(self, rec: Record, report: CopyReport) -> Record | None:
        """``rec`` with its payload, or None (counted in the report) if it cannot be had."""
        k = rec["k"]
        filler = _FILLERS.get(k)
        return rec if filler is None else filler(self, rec, report)


def _fill_run(p: _Payloads, rec: Record, report: CopyReport) -> Record | None:
    args = p.detail(rec["run"]).args  # the call's arguments: the same for every try
    return rec | {"args": list(args) if args else None}


def _fill_step_outcome(p: _Payloads, rec: Record, report: CopyReport) -> Record | None:
    if rec["k"] == "err" and rec.get("codec") is None:
        return rec | {"out": None}
    codec, out = p.source.get_output(rec["run"], rec["epoch"], rec["pos"], rec["att"])
    return rec | {"codec": codec, "out": out}


def _fill_done(p: _Payloads, rec: Record, report: CopyReport) -> Record | None:
    detail = p.detail(rec["run"])
    if rec["epoch"] != detail.run.epoch or detail.result is None:
        report.leave_out("results of epochs superseded by a reset")
        return None
    return rec | {"codec": detail.result[0], "out": detail.result[1]}


def _fill_cache(p: _Payloads, rec: Record, report: CopyReport) -> Record | None:
    entry = p.source.cache_get(rec["key"])
    if entry is None or entry.output is None or entry.created != rec["ts"]:
        report.leave_out("cache entries replaced, dropped or expired since")
        return None
    report.cache_entries += 1
    return rec | {"codec": entry.codec or rec["codec"], "out": entry.output}


def _fill_lgput(p: _Payloads, rec: Record, report: CopyReport) -> Record | None:
    row = p.checkpoint(rec["thread"], rec["ns"], rec["id"])
    if row is None:
        report.leave_out("checkpoints deleted since")
        return None
    return rec | {
        "ctype": row.checkpoint[0],
        "cp": row.checkpoint[1],
        "mtype": row.metadata[0],
        "meta": row.metadata[1],
    }


def _fill_lgwrite(p: _Payloads, rec: Record, report: CopyReport) -> Record | None:
    row = p.checkpoint(rec["thread"], rec["ns"], rec["id"])
    if row is None:
        report.leave_out("checkpoint writes deleted since")
        return None
    # the task's writes as they stand: a write once saved stays, so writing them all again in
    # its first record and again in later ones ends with the same rows
    mine: list[CheckpointWrite] = [w for w in row.writes if w.task_id == rec["task"]]
    return rec | {"writes": [[w.idx, w.channel, w.value[0], w.value[1]] for w in mine]}


def _fill_board(p: _Payloads, rec: Record, report: CopyReport) -> Record | None:
    view = p.source.board(rec["run"], key=rec["key"], history=True)
    found = [e for e in view.entries if e.version == rec["ver"]]
    if view.epoch != rec["epoch"] or not found:
        report.leave_out("blackboard entries of epochs superseded by a reset")
        return None
    return rec | {"codec": found[0].codec, "out": found[0].output}


_FILLERS: dict[str, Callable[[_Payloads, Record, CopyReport], Record | None]] = {
    "run": _fill_run,
    "ok": _fill_step_outcome,
    "err": _fill_step_outcome,
    "done": _fill_done,
    "cache": _fill_cache,
    "lgput": _fill_lgput,
    "lgwrite": _fill_lgwrite,
    "board": _fill_board,
}


def _source_records(source: Journal, page: int) -> Iterator[Record]:
    after = 0
    while True:
        events = source.events(after=after, limit=page)
        for event in events:
            yield dict(event.data)
        if len(events) < page:
            return
        after = events[-1].seq


def _check_copyable(source: Journal, target: Journal, options: CopyOptions) -> None:
    held = [r for r in source.list_runs(limit=1_000_000) if r.holder is not None]
    if held:
        names = ", ".join(f"{r.run_id} ({r.holder})" for r in held[:5])
        raise JournalError(
            f"{len(held)} run(s) of {source.location} are being executed: {names}",
            fix="let them finish (or stop those processes), then copy again",
        )
    if not options.into_non_empty and target.events(limit=1):
        raise JournalError(
            f"the destination journal {target.location} is not empty",
            fix="copy into a new journal (a new file, database or ?schema=NAME), or pass "
            "--into-non-empty to append to it (records it already has are skipped)",
        )


def carry_key(source_id: str, target_id: str) -> str:
    """Give the copy the source's HMAC key (kept outside both journals, per journal id), so its
    authenticated outputs (classes, pickles) still load there. Returns what happened: "copied",
    "same", "none" (the source never needed one) or "env" ($LIL_PICKLE_KEY serves both); raises
    if the destination already has a different key."""
    import os

    from letitloop import _keys

    if os.environ.get(_keys.KEY_ENV):
        return "env"
    src, dst = _keys.key_path(source_id), _keys.key_path(target_id)
    if not src.exists():
        return "none"
    key = src.read_bytes().strip()
    if dst.exists():
        if dst.read_bytes().strip() == key:
            return "same"
        raise JournalError(
            f"the destination journal already has its own key ({dst}), different from the "
            f"source's ({src}): outputs copied from the source would not authenticate there",
            fix="copy into a new journal, or restore the source's key into that file",
        )
    _keys._make_dirs(dst.parent)
    _keys._write_new(dst, key)
    return "copied"


def copy_journal(
    source: Journal, target: Journal, options: CopyOptions | None = None
) -> CopyReport:
    """Copy every record of ``source`` into ``target`` (see the module docstring)."""
    options = options or CopyOptions()
    _check_copyable(source, target, options)
    key = carry_key(source.journal_id, target.journal_id)
    payloads = _Payloads(source)
    report = CopyReport()
    runs: set[str] = set()
    threads: set[str] = set()
    pending: list[Record] = []
    for rec in _source_records(source, options.page):
        full = payloads.fill(rec, report)
        if full is None:
            continue
        if full["k"] in ("lgput", "lgwrite"):
            threads.add(full["thread"])
        elif full["k"] not in JOURNAL_KINDS:
            runs.add(full["run"])
        if full.get("ask"):
            report.approvals += 1
        if full["k"] == "propose":
            report.proposals += 1
        pending.append(full)
        if len(pending) >= _MAX_GROUP_RECORDS:
            target.import_records(pending)
            report.records += len(pending)
            pending = []
    if pending:
        target.import_records(pending)
        report.records += len(pending)
    report.runs, report.threads, report.key = len(runs), len(threads), key
    return report
