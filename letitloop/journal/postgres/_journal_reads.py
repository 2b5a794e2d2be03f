"""The read side of ``PgJournal``: each read flushes this process's held records first (read
your own writes), then runs on the shared connection (``postgres._reads`` holds the SQL); rate
limits and notifications are ``postgres._limits``'."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from letitloop.errors import JournalError
from letitloop.journal import _rows
from letitloop.journal._contract import (
    ApprovalInfo,
    BoardView,
    CacheEntry,
    CheckpointRow,
    Encoded,
    EventInfo,
    Proposal,
    RunDetail,
    RunInfo,
)
from letitloop.journal._records import Record
from letitloop.journal._store_queries import output_of, output_select
from letitloop.journal.postgres import _reads, _schema
from letitloop.journal.postgres._listen import Follower, Subscription

T = TypeVar("T")


class PgReads:
    """Reads of the contract on PostgreSQL (a part of ``PgJournal``)."""

    ttl: float
    where: _schema.PgLocation
    _lock: threading.RLock
    _held: list[Record]
    _follower: Follower | None

    def _run(self, fn: Callable[[Any], T]) -> T:
        raise NotImplementedError  # PgJournal

    def _flush(self) -> None:
        raise NotImplementedError  # PgJournal

    def _fresh(self) -> Any:
        raise NotImplementedError  # PgJournal

    # -- reads --------------------------------------------------------------------------------

    def _read(self, fn: Callable[[Any], T]) -> T:
        if self._held:
            self._flush()  # read your own writes
        return self._run(lambda conn: fn(conn.cursor()))

    def board(self, run_id: str, *, key: str | None = None, history: bool = False) -> BoardView:
        def read(cur: Any) -> BoardView:
            row = cur.execute("SELECT epoch FROM runs WHERE run_id = %s", [run_id]).fetchone()
            if row is None:
                raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
            params = _rows.board_params(run_id, row[0], key, history)
            rows = cur.execute(_rows.pg(_rows.BOARD_SELECT), params).fetchall()
            return _rows.board_view(run_id, row[0], rows)

        return self._read(read)

    def get_output(self, run_id: str, epoch: int, position: int, attempt: int) -> Encoded:
        key = [run_id, epoch, position, attempt]
        row = self._read(lambda cur: cur.execute(output_select("%s"), key).fetchone())
        codec, output = output_of(row, run_id, epoch, position, attempt)
        return codec, bytes(output)

    def list_runs(
        self, *, status: str | None = None, workflow: str | None = None, limit: int = 100
    ) -> list[RunInfo]:
        return self._read(
            lambda cur: _reads.list_runs(
                cur, self.ttl, status=status, workflow=workflow, limit=limit
            )
        )

    def get_run(self, run_id: str) -> RunDetail:
        def detail(cur: Any) -> RunDetail:
            runs = _reads.list_runs(
                cur, self.ttl, status=None, workflow=None, limit=1, run_id=run_id
            )
            if not runs:
                raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
            run = runs[0]
            row = cur.execute(
                "SELECT result_codec, result, entry, args_codec, args, result_shown FROM runs "
                "WHERE run_id = %s",
                [run_id],
            ).fetchone()
            shown = {"result_shown": row[5]} if "result_shown" in RunDetail._fields else {}
            return RunDetail(
                run,
                _reads.attempts(cur, run_id, run.epoch),
                (row[0], bytes(row[1])) if row[0] else None,
                row[2],
                (row[3], bytes(row[4])) if row[3] else None,
                **shown,
            )

        return self._read(detail)

    def results(self, run_ids: Sequence[str]) -> dict[str, Encoded]:
        rows = self._read(
            lambda cur: cur.execute(
                "SELECT run_id, result_codec, result FROM runs WHERE run_id = ANY(%s) AND "
                "status = 'completed' AND result_codec IS NOT NULL",
                [list(run_ids)],
            ).fetchall()
        )
        return {r[0]: (r[1], bytes(r[2])) for r in rows}

    def find_run(self, text: str) -> str:
        from letitloop.journal._memory import match_run

        ids = self._read(lambda cur: [r[0] for r in cur.execute("SELECT run_id FROM runs")])
        return match_run(text, ids)

    def events(
        self, *, after: int = 0, run_id: str | None = None, limit: int = 1000
    ) -> list[EventInfo]:
        return self._read(lambda cur: _reads.events(cur, after, run_id, limit))

    def subscribe(
        self, callback: Callable[[list[EventInfo]], None], *, run_id: str | None = None
    ) -> Subscription:
        with self._lock:
            if self._follower is None or self._follower.closed:
                self._follower = Follower(self._fresh, self.where.channel, self.ttl)
            return self._follower.add(callback, run_id)

    def cache_get(self, key: str) -> CacheEntry | None:
        return self._read(lambda cur: _reads.cache_get(cur, key))

    def cache_list(self, limit: int = 100) -> list[CacheEntry]:
        return self._read(lambda cur: _reads.cache_list(cur, limit))

    def proposals(self, state: str | None = None) -> list[Proposal]:
        return self._read(lambda cur: _reads.proposals(cur, state))

    def approvals(
        self, *, status: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> list[ApprovalInfo]:
        return self._read(lambda cur: _reads.approvals(cur, status, run_id, limit))

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
        req: dict[str, Any] = {"thread": thread_id, "ns": ns, "cid": checkpoint_id}
        req |= {"before": before, "filter": filter, "limit": limit}
        return self._read(lambda cur: _reads.checkpoints(cur, req))
