"""``OwnerJournal``: the Journal contract spoken to a journal's owner process over its socket.

Clients never import duckdb. The first call finds the owner's socket or starts the owner
(detached, in its own session) and waits until it answers. If the owner dies, every call
reconnects (starting a new owner if needed), re-takes the leases this process held, and resends
its request; records have natural keys, so a resent write is never applied twice.
"""

from __future__ import annotations

import os
import socket
import time
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Callable, Sequence
from pathlib import Path

from letitloop.errors import JournalUnavailableError, LetItLoopError
from letitloop.journal import _values  # its records are made when first used
from letitloop.journal._config import JournalPaths, find_journal
from letitloop.journal._records import (
    Record,
    cache_record,
)
from letitloop.journal._state import run_state
from letitloop.journal._writes import RecordWrites
from letitloop.journal.duckdb import _files, _wire
from letitloop.journal.duckdb._client_queues import OwnerQueues
from letitloop.journal.duckdb._connection import (
    READ_TIMEOUT,
    OwnerConnection,
    pid_from,
    reap,
)
from letitloop.journal.duckdb._link import Link

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal._values import (
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

_journals: dict[Path, OwnerJournal] = {}
_journals_lock = allocate_lock()


def open_journal(spec: str | os.PathLike[str] | None = None) -> OwnerJournal:
    """The process-wide journal object for a path (found as ``journal._config`` says if None)."""
    path = find_journal(spec)
    with _journals_lock:
        journal = _journals.get(path)
        if journal is None or journal.closed:
            journal = _journals[path] = OwnerJournal(path)
        return journal


def stop_owner(spec: str | os.PathLike[str] | None = None, timeout: float = 10.0) -> int | None:
    """Stop a journal's owner if one runs (it folds, checkpoints and exits); return its pid."""
    paths = JournalPaths(find_journal(spec))
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(str(paths.socket))
        link = Link(sock)
        session = f"{os.getpid()}@{socket.gethostname()}/stop"
        hello = link.call({"op": "hello", "session": session}, READ_TIMEOUT)
        if hello.get("ok") and _files.foreign(paths, hello) is not None:
            return None  # the owner of another journal (a deleted or moved one): not ours
        pid = int(link.call({"op": "stop"}, READ_TIMEOUT)["pid"])
    except TimeoutError:
        pid = pid_from(paths.pid_file)
        raise JournalUnavailableError(
            f"the journal owner (pid {pid}) for {paths.db} did not answer within "
            f"{READ_TIMEOUT:g} s: it is stopped (SIGSTOP, Ctrl-Z), hung, or overloaded",
            fix=f"resume it (`kill -CONT {pid}`) and stop it again, or end it (`kill {pid}`)",
        ) from None
    except OSError:
        return None
    finally:
        sock.close()
    with _journals_lock:
        journal = _journals.pop(paths.db, None)
    if journal is not None:
        journal.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reap()
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        if not paths.pid_file.exists() and not paths.socket.exists():
            time.sleep(0.02)  # pid file goes last; give the process a moment to exit
            reap()
            return pid
        time.sleep(0.01)
    return pid


class _Sub:
    """A pushed-event subscription on its own connection and thread."""

    def __init__(self, journal: OwnerJournal, callback: Any, run_id: str | None) -> None:
        self.journal, self.callback, self.run_id = journal, callback, run_id
        self.closed = False
        self.link: Link | None = None
        import threading  # only a subscription runs a thread

        self.thread = threading.Thread(target=self._loop, name="lil-subscription", daemon=True)
        self.ready = threading.Event()
        self.thread.start()
        self.ready.wait(30)

    def _loop(self) -> None:
        pause = 0.05
        while not self.closed:
            try:
                self.link = self.journal._connect()
                self.link.call({"op": "subscribe", "run": self.run_id}, READ_TIMEOUT)
                self.link.unbounded()  # pushes come when they come
                if self.ready.is_set():
                    self.callback([])  # resubscribed after an owner restart: re-read, may miss
                self.ready.set()
                pause = 0.05
                stream = _wire.Stream(self.link.sock)
                while not self.closed:
                    msg = stream.recv()
                    if "push" in msg:
                        self.callback([_event(e) for e in msg["push"]])
            except (OSError, LetItLoopError):
                if self.closed or self.journal.closed:
                    return  # a closed journal ends its subscriptions
                time.sleep(pause)
                pause = min(1.0, pause * 2)  # no owner can start: try again, less and less often

    def close(self) -> None:
        self.closed = True
        if self.link is not None:
            try:
                self.link.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.link.close()


def _event(e: dict[str, Any]) -> EventInfo:
    return _values.EventInfo(
        seq=e["seq"],
        run_id=e["run"],
        kind=e.get("k") or e.get("kind", ""),
        position=e.get("pos"),
        attempt=e.get("att"),
        name=e.get("name"),
        ts=e["ts"],
        data=e.get("data") or {k: v for k, v in e.items() if k != "seq"},
    )


class OwnerJournal(OwnerConnection, OwnerQueues, RecordWrites):
    """See the module docstring. Thread-safe: each concurrent call uses its own connection."""

    def __init__(self, path: Path) -> None:
        self._init_connection(path)
        link = self._connect()
        self._pool.append(link)

    # -- the contract -------------------------------------------------------------------------

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
        durable: bool = True,
    ) -> RunState:
        req = {"op": "open_run", "run": run_id, "wf": workflow, "key": key, "lease": lease}
        req.update(args=list(args) if args else None, entry=entry, parent=parent)
        req["lock_timeout"] = lock_timeout
        if reopen:
            req["reopen"] = True
        if not steps and "head" in self.owner_features:  # an older owner sends the steps
            req["head"] = True
        req["inv"] = invocation = os.urandom(6).hex()  # this call, not the whole process
        lazy = lease and not durable and "lazy_open" in self.owner_features
        if lazy:
            req["lazy"] = True
        state = run_state(self._call(req)["state"])
        if lease and state.status != "completed":
            self._leases[run_id] = invocation
            if lazy:  # opened again on a new owner if this one dies before a write carries it
                self._lazy[run_id] = {k: v for k, v in req.items() if k not in ("lazy", "id")}
        return state

    def release_run(self, run_id: str) -> None:
        invocation = self._leases.pop(run_id, None)
        self._lazy.pop(run_id, None)
        self._call({"op": "release", "run": run_id, "inv": invocation}, reply=False)

    def append(self, records: Sequence[Record], *, sync: bool = True) -> None:
        self._call({"op": "append", "recs": list(records), "ack": sync}, reply=sync)
        if sync and self._lazy:  # written after what was held: a lazy opening is durable now
            for rec in records:
                self._lazy.pop(str(rec.get("run")), None)

    def _append_to_run(self, run_id: str, records: list[Record]) -> None:
        self._call({"op": "append", "recs": records, "run": run_id})  # loads an evicted run

    def import_records(self, records: Sequence[Record]) -> None:
        """Write copied history (``lil journal copy``): no lease; each request names its run, so
        the owner loads a run it evicted meanwhile."""
        from letitloop.journal._copy import history_groups

        for run_id, group in history_groups(records):
            self._call({"op": "append", "recs": group, "run": run_id, "import": True})

    def get_output(self, run_id: str, epoch: int, position: int, attempt: int) -> Encoded:
        req = {"op": "output", "run": run_id, "epoch": epoch, "pos": position, "att": attempt}
        codec, data = self._call(req)["out"]
        return codec, data

    def list_runs(
        self, *, status: str | None = None, workflow: str | None = None, limit: int = 100
    ) -> list[RunInfo]:
        """Newest first; the owner answers a bounded page at a time, so this asks for the next
        page (after the last run of this one) until it has ``limit`` runs or there are no more."""
        req: dict[str, Any] = {"op": "runs", "status": status, "workflow": workflow}
        runs: list[dict[str, Any]] = []
        while True:
            msg = self._call(req | {"limit": limit - len(runs)})
            runs += msg["runs"]
            if not msg.get("more") or not msg["runs"] or len(runs) >= limit:
                return [_run_info(r) for r in runs]
            req["before"] = [runs[-1]["updated"], runs[-1]["run"]]

    def find_run(self, text: str) -> str:
        from letitloop.journal._memory import match_run

        return match_run(text, self._call({"op": "run_ids"})["runs"])

    def results(self, run_ids: Sequence[str]) -> dict[str, Encoded]:
        ids, out = list(run_ids), {}
        for i in range(0, len(ids), _wire.RESULTS_PER_REQUEST):
            msg = self._call({"op": "results", "runs": ids[i : i + _wire.RESULTS_PER_REQUEST]})
            out.update({r[0]: (r[1], r[2]) for r in msg["results"]})
        return out

    def get_run(self, run_id: str) -> RunDetail:
        msg = self._call({"op": "run", "run": run_id})
        result = msg.get("result")
        args = msg.get("args")
        return _values.RunDetail(
            _run_info(msg["run"]),
            [_attempt(a) for a in msg["attempts"]],
            (result[0], result[1]) if result else None,
            msg.get("entry"),
            (args[0], args[1]) if args else None,
            result[2] if result and len(result) > 2 else None,
        )

    def events(
        self, *, after: int = 0, run_id: str | None = None, limit: int = 1000
    ) -> list[EventInfo]:
        """In order from ``after``; asked a bounded page at a time, as ``list_runs`` is."""
        events: list[dict[str, Any]] = []
        while True:
            left = limit - len(events)
            msg = self._call({"op": "events", "after": after, "run": run_id, "limit": left})
            events += msg["events"]
            if not msg.get("more") or not msg["events"] or len(events) >= limit:
                return [_event(e) for e in events]
            after = events[-1]["seq"]

    def subscribe(
        self, callback: Callable[[list[EventInfo]], None], *, run_id: str | None = None
    ) -> _Sub:
        return _Sub(self, callback, run_id)

    def resolve_marker(
        self, run_id: str, marker: str | int, resolution: str, by: str, comment: str | None = None
    ) -> None:
        req = {"op": "resolve", "run": run_id, "marker": marker, "res": resolution, "by": by}
        self._call(req | ({"note": comment} if comment else {}))

    def cache_get(self, key: str) -> CacheEntry | None:
        row = self._call({"op": "cache_get", "key": key})["entry"]
        if row is None:
            return None
        codec, output, cost, created, expires = row
        return _values.CacheEntry(
            key, "", created, expires, len(output or b""), cost, codec, output
        )

    def cache_put(
        self, key: str, fn: str, encoded: Encoded, cost_micros: int, expires: float | None
    ) -> None:
        self.append([cache_record(key, fn, *encoded, cost_micros, expires)], sync=False)

    def cache_list(self, limit: int = 100) -> list[CacheEntry]:
        rows = self._call({"op": "cache_list", "limit": limit})["entries"]
        return [_values.CacheEntry(*row) for row in rows]

    def set_budget(
        self, run_id: str, by: str, *, usd_micros: int | None = None, tokens: int | None = None
    ) -> None:
        req = {"op": "budget", "run": run_id, "usd": usd_micros, "tokens": tokens, "by": by}
        self._call(req)

    def proposals(self, state: str | None = None) -> list[Proposal]:
        rows = self._call({"op": "proposals", "state": state})["proposals"]
        return [_values.Proposal(*row) for row in rows]

    def approvals(
        self, *, status: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> list[ApprovalInfo]:
        req = {"op": "approvals", "status": status, "run": run_id, "limit": limit}
        return [approval_row(r) for r in self._call(req)["approvals"]]

    def board(self, run_id: str, *, key: str | None = None, history: bool = False) -> BoardView:
        req = {"op": "board", "run": run_id, "key": key, "history": history}
        epoch, rows = self._call(req)["board"]
        from letitloop.journal._rows import board_view

        return board_view(run_id, epoch, rows)

    def rearm_step(self, run_id: str, by: str, step: str | int | None = None) -> None:
        self._call({"op": "rearm", "run": run_id, "step": step, "by": by})

    def reset_run(self, run_id: str, by: str, comment: str | None = None) -> None:
        self._call(
            {"op": "reset", "run": run_id, "by": by} | ({"note": comment} if comment else {})
        )

    def gc(self, *, older_than: float, statuses: Sequence[str] = ("completed",)) -> int:
        msg = self._call({"op": "gc", "older_than": older_than, "statuses": list(statuses)})
        return int(msg["deleted"])

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
        req: dict[str, Any] = {"op": "checkpoints", "thread": thread_id, "ns": ns}
        req["cid"] = checkpoint_id  # "id" tags the request on the wire
        req |= {"before": before, "filter": filter, "limit": limit}
        from letitloop.journal import _checkpoints  # (a graph's, not a workflow's: lazily)

        return [_checkpoints.row(r) for r in self._call(req)["rows"]]

    # -- shared rate limits (kept by the owner) and the notification outbox -------------------

    def take_capacity(self, name: str, rpm: int | None, tpm: int | None, tokens: int = 0) -> float:
        req = {"op": "limit", "act": "take", "name": name, "rpm": rpm, "tpm": tpm}
        return float(self._call(req | {"tokens": tokens})["wait"])

    def adjust_capacity(self, name: str, tokens: int) -> None:
        req = {"op": "limit", "act": "adjust", "name": name, "tokens": tokens, "ack": False}
        self._call(req, reply=False)

    def block_capacity(self, name: str, seconds: float) -> None:
        req = {"op": "limit", "act": "block", "name": name, "seconds": float(seconds)}
        self._call(req | {"ack": False}, reply=False)

    def capacity(self) -> list[dict[str, Any]]:
        return list(self._call({"op": "capacity"})["buckets"])

    def notifications(self, *, state: str | None = None, limit: int = 100) -> list[Notice]:
        from letitloop.journal._outbox import notice

        rows = self._call({"op": "notices", "state": state, "limit": limit})["value"]
        return [notice(r) for r in rows]

    def retry_notification(self, key: str) -> None:
        self._call({"op": "notice_retry", "key": key})

    # -- owner administration (not part of the contract) ---------------------------------------

    def sql(self, query: str) -> dict[str, Any]:
        msg = self._call({"op": "sql", "sql": query})
        keys = ("columns", "rows", "truncated", "limit")
        return {k: msg.get(k) for k in keys} | {"truncated": bool(msg.get("truncated"))}

    def stats(self) -> dict[str, Any]:
        return dict(self._call({"op": "stats"})["stats"])

    def quarantine(self, action: str | None = None, lsn: int | None = None) -> dict[str, Any]:
        """Records the owner set aside because it could not fold them; ``action`` "drop" or
        "retry" resolves one (``lsn``) or all of them first."""
        msg = self._call({"op": "quarantine", "action": action, "lsn": lsn})
        return {"rows": msg["rows"], "done": msg["done"]}

    def stop_owner(self) -> int:
        pid = int(self._call({"op": "stop"})["pid"])
        self.close()
        return pid

    def close(self) -> None:
        with self._lock:
            for link in self._pool:
                link.close()
            self._pool.clear()
        self.closed = True


def approval_row(row: list[Any]) -> ApprovalInfo:
    """An ``ApprovalInfo`` from the store's row (JSON columns arrive as text)."""
    import json

    item = dict(zip(_values.ApprovalInfo._fields, row, strict=True))
    for name in ("payload", "schema", "edited"):
        item[name] = json.loads(item[name]) if item[name] is not None else None
    item["timed_out"] = bool(item["timed_out"])
    return _values.ApprovalInfo(**item)


def _run_info(r: dict[str, Any]) -> RunInfo:
    return _values.RunInfo(
        run_id=r["run"],
        workflow=r["wf"],
        key=r["key"],
        status=r["status"],
        epoch=r["epoch"],
        attempt=r["try"],
        created=r["created"],
        updated=r["updated"],
        steps_done=r["done"],
        current_step=r.get("current"),
        holder=r.get("holder"),
        parent=r.get("parent"),
        error=r.get("error"),
        cost_micros=r.get("cost") or 0,
        tokens=r.get("tokens") or 0,
        saved_micros=r.get("saved") or 0,
        active_seconds=r.get("active"),
        budget=(r["budget"][0], r["budget"][1]) if r.get("budget") else None,
        steps_total=r.get("total"),
    )


def _attempt(a: dict[str, Any]) -> AttemptInfo:
    return _values.AttemptInfo(
        position=a["pos"],
        attempt=a["att"],
        kind=a["kind"] or "step",
        name=a["name"] or "?",
        fingerprint=a["fp"] or "",
        status=a["status"],
        started=a["started"],
        ended=a["ended"],
        codec=a["codec"],
        size=a["size"] or 0,
        error=a["err"],
        next_position=a["next"],
        resolution=a["res"],
        resolved_by=a["res_by"],
        preview=a.get("preview"),
        cost_micros=a.get("cost") or 0,
        tokens_in=a.get("tin") or 0,
        tokens_out=a.get("tout") or 0,
        model=a.get("model"),
        cache=a.get("cache"),
    )
