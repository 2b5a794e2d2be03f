"""Request dispatch: what each operation does to the live state, answered from memory where it
can; reads go to the database thread, runs not in memory are loaded first, leases are waited for."""

from __future__ import annotations

import os
import time

from letitloop._version import __version__ as VERSION
from letitloop.errors import JournalError, LetItLoopError, RunLockedError
from letitloop.journal._records import budget_record
from letitloop.journal._state import (
    RunEntry,
    rearm_record,
    reset_record,
    resolve_record,
)
from letitloop.journal.duckdb import _wire
from letitloop.journal.duckdb.owner._base import (
    OwnerBase,
)
from letitloop.journal.duckdb.owner._conn import Conn, error_reply, reply_to
from letitloop.journal.duckdb.owner._reads import QUERIES, READS, capped
from letitloop.journal.duckdb.owner._requests import BadRequest
from letitloop.journal.duckdb.owner._start import entry_from

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any


class Dispatch(OwnerBase):
    """Each request's handling, and the requests that wait (a run loading, a lease)."""

    def _handle(
        self, conn: Conn, req: dict[str, Any], batch: list[Any], replies: list[Any]
    ) -> None:
        op = req.get("op")
        if op == "hello":
            if conn.session is None:
                conn.session = str(req["session"])
                self.sessions[conn.session] = self.sessions.get(conn.session, 0) + 1
            replies.append((conn, reply_to(req, self._hello())))
            return
        if conn.session is None:
            raise JournalError("the first request on a connection must be hello")
        if not self.db_ready and self._needs_db(conn, op, req):
            self.deferred.append((conn, req))
            self.deferring.add(conn)
            self.load_now.set()
            return
        run_id: str = req.get("run") or ""
        unloaded = run_id and run_id not in self.state.runs and run_id in self.known
        if (
            op in ("open_run", "resolve", "rearm", "budget", "reset", "relock", "release", "append")
            and unloaded
        ):  # an append names its run only when it comes from outside the run (an answer)
            self._park_load(run_id, conn, req)
            return
        if op == "open_run":
            self._open_run(conn, req, batch, replies)
        elif op == "append":
            # an import (``lil journal copy``) writes history: no lease, refused for a held run
            session = None if req.get("import") else conn.session
            for rec in req["recs"]:  # each record is a fact of its own: earlier ones stand
                if self.state.check(rec, session):
                    self.state.apply(rec)
                    if rec["run"]:
                        self.known.add(rec["run"])
                    batch.append((rec, req.get("ack", True)))
            if req.get("ack", True):
                replies.append((conn, reply_to(req, {"ok": True})))
        elif op == "release":  # the client does not wait for this one
            self.state.release(run_id, conn.session, req.get("inv"))
            self._wake_waiters(run_id)
        elif op == "relock":
            for rid in req["runs"]:
                if rid not in self.state.runs and rid in self.known:
                    self._park_load(rid, conn, req)
                    return
            self.state.relock(req["runs"], conn.session, req.get("invs"))
            # runs this owner never heard of: opened lazily, their opening lost with the owner
            # before a write carried it (the client opens them again: ``_connection``)
            unknown = [rid for rid in req["runs"] if rid not in self.state.runs]
            replies.append((conn, reply_to(req, {"ok": True, "unknown": unknown})))
        elif op in ("resolve", "rearm", "budget", "reset"):
            entry = self._entry(run_id)
            if op == "budget":
                rec = budget_record(run_id, entry.epoch, req["usd"], req["tokens"], req["by"])
            elif op == "resolve":
                rec = resolve_record(entry, req["marker"], req["res"], req["by"], req.get("note"))
            elif op == "rearm":
                rec = rearm_record(entry, req.get("step"), req["by"])
            else:
                rec = reset_record(entry, req["by"], req.get("note"))
            if self.state.check(rec, conn.session):
                self.state.apply(rec)
                batch.append((rec, True))
            replies.append((conn, reply_to(req, {"ok": True})))
        elif op == "output" and self._inline_output(conn, req, replies):
            return
        elif op == "queue":
            self._queue_request(conn, req, replies)
        elif op in ("limit", "capacity", "notices", "notice_retry"):
            self._limits_and_notices(conn, req, replies)
        elif op == "subscribe":
            conn.subscribed, conn.sub_run = True, req.get("run")
            replies.append((conn, reply_to(req, {"ok": True})))
        elif op == "stop":
            self.stopping = True
            replies.append((conn, reply_to(req, {"ok": True, "pid": os.getpid()})))
        elif op == "checkpoints" and (rows := self.lg_heads.answer(req)) is not None:
            replies.append((conn, reply_to(req, {"ok": True, "rows": rows})))
        elif op in READS or op in QUERIES:
            held = [r for r, e in self.state.runs.items() if e.holder is not None]
            self.jobs.put(("read", conn, req, held))
        else:
            raise JournalError(f"unknown journal operation {op!r}")

    def _limits_and_notices(self, conn: Conn, req: dict[str, Any], replies: list[Any]) -> None:
        """Rate limits are answered here, from memory; the outbox on the notifier's thread."""
        op, now = req["op"], time.monotonic()
        if op == "limit":
            act = req["act"]
            if act == "take":
                wait = self.buckets.take(
                    req["name"], req.get("rpm"), req.get("tpm"), req.get("tokens", 0), now
                )
                replies.append((conn, reply_to(req, {"ok": True, "wait": wait})))
                return
            if act == "adjust":
                self.buckets.adjust(req["name"], req.get("tokens", 0), now)
            elif act == "block":
                self.buckets.block(req["name"], req.get("seconds", 0.0), now)
            else:
                raise BadRequest(f"request 'limit': unknown act {act!r}"[:200])
            if req.get("ack", True):
                replies.append((conn, reply_to(req, {"ok": True})))
        elif op == "capacity":
            replies.append(
                (conn, reply_to(req, {"ok": True, "buckets": self.buckets.snapshot(now)}))
            )
        else:
            n = self.notifier

            def work() -> Any:
                if op == "notices":
                    limit = capped(req, 100)[0]
                    return [list(x) for x in n.notices(req.get("state"), limit)]
                return n.retry(req["key"])

            n.ask(work, lambda reply: self._send_from_notifier(conn, reply_to(req, reply)))

    def _send_from_notifier(self, conn: Conn, msg: dict[str, Any]) -> None:
        if not msg["ok"]:
            msg["error"] = {"type": "JournalError", "message": msg["error"]}
        self._send(conn, msg)
        self.wake_w.send(b"x")  # what could not go out at once waits for the event loop

    def _hello(self) -> dict[str, Any]:
        return {
            "ok": True,
            "protocol": _wire.PROTOCOL,
            "schema": self.schema_version if not self.db_ready else self.store.schema_version,
            "journal_id": self.journal_id if not self.db_ready else self.store.journal_id,
            "pid": os.getpid(),
            "version": VERSION,
            # open_run with head=True: the run's header, not its steps; with lazy=True: its
            # attempt's start written with the next acknowledged write, not synced before the
            # reply; relock names the runs it does not know
            "features": ["head", "lazy_open"],
            "files": self.identity,  # the journal this owner serves (see _files.identity)
        }

    def _entry(self, run_id: str) -> RunEntry:
        entry = self.state.runs.get(run_id)
        if entry is None:
            raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
        return entry

    def _open_run(
        self, conn: Conn, req: dict[str, Any], batch: list[Any], replies: list[Any]
    ) -> None:
        assert conn.session is not None
        try:
            wire, recs = self.state.begin(req, conn.session)
        except RunLockedError:
            wait = float(req.get("lock_timeout") or 0)
            if wait <= 0:
                raise
            deadline = req.setdefault("_deadline", time.monotonic() + wait)
            self.waiters.setdefault(req["run"], []).append((deadline, conn, req))
            return
        if wire is None:
            raise JournalError(f"no run {req['run']!r} in this journal", run_id=req["run"])
        self.known.add(req["run"])
        batch.extend((rec, not req.get("lazy")) for rec in recs)
        replies.append((conn, reply_to(req, {"ok": True, "state": wire})))

    def _inline_output(self, conn: Conn, req: dict[str, Any], replies: list[Any]) -> bool:
        entry = self.state.runs.get(req["run"])
        step = entry.steps.get(req["pos"]) if entry and entry.epoch == req["epoch"] else None
        if step and step["att"] == req["att"] and step.get("out") is not None:
            replies.append((conn, reply_to(req, {"ok": True, "out": [step["codec"], step["out"]]})))
            return True
        return False

    def _park_load(self, run_id: str, conn: Conn, req: dict[str, Any]) -> None:
        if run_id not in self.loading:
            self.loading[run_id] = []
            self.jobs.put(("load", run_id))
        self.loading[run_id].append((conn, req))

    def _loaded(self, run_id: str, data: dict[str, Any] | None, batch: Any, replies: Any) -> None:
        parked = self.loading.pop(run_id, [])
        if data is not None and run_id not in self.state.runs:
            self.state.runs[run_id] = entry_from(data)
        elif data is None:
            self.known.discard(run_id)
        for conn, req in parked:
            self._redo(conn, req, batch, replies)

    def _redo(self, conn: Conn, req: dict[str, Any], batch: Any, replies: Any) -> None:
        """Handle a request that waited (for a run to load, or for a lease)."""
        if conn.alive:
            self.writers.add(conn)  # (a retried open_run or a parked write)
            try:
                self._handle(conn, req, batch, replies)
            except LetItLoopError as exc:
                replies.append((conn, reply_to(req, error_reply(exc))))
            except Exception as exc:  # see _read
                import traceback  # (a bug's report: not imported before one)

                traceback.print_exc()
                replies.append((conn, reply_to(req, error_reply(exc))))

    def _wake_waiters(self, run_id: str) -> None:
        waiting = self.waiters.pop(run_id, [])
        if waiting:  # retried in order; the first wins the lease, the others park again
            self.inbox.append(("retry", waiting))

    def _expire_waiters(self, replies: list[Any]) -> None:
        now = time.monotonic()
        for run_id in list(self.waiters):
            keep = []
            for deadline, conn, req in self.waiters[run_id]:
                if not conn.alive:
                    continue
                if deadline <= now:
                    exc = RunLockedError(
                        f"run {run_id} was still being executed by another process after "
                        f"waiting {req.get('lock_timeout')} s",
                        fix="wait longer (lock_timeout=) or stop the other process",
                        run_id=run_id,
                    )
                    replies.append((conn, reply_to(req, error_reply(exc))))
                else:
                    keep.append((deadline, conn, req))
            self.waiters[run_id] = keep
            if not keep:
                del self.waiters[run_id]
