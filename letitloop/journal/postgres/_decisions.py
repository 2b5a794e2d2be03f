"""Decisions on PostgreSQL runs (resolve a marker, budget, re-arm, reset), the cache and gc: each
one transaction that loads the run's state fenced, checks the record with the shared state
machine and projects it (a part of ``PgJournal``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from letitloop.errors import JournalError
from letitloop.journal._contract import Encoded
from letitloop.journal._records import Record, budget_record, cache_record
from letitloop.journal._state import (
    JournalState,
    RunEntry,
    rearm_record,
    reset_record,
    resolve_record,
)
from letitloop.journal.postgres import _reads
from letitloop.journal.postgres._writes import project

T = TypeVar("T")


class PgDecisions:
    """Writes that change a run from outside it (a person's decision, a cleanup)."""

    session: str
    ttl: float
    _held: list[Record]
    _cache: dict[str, tuple[RunEntry, int]]

    def _run(self, fn: Callable[[Any], T]) -> T:
        raise NotImplementedError  # PgJournal

    def _flush(self) -> None:
        raise NotImplementedError  # PgJournal

    def _poke(self) -> None:
        raise NotImplementedError  # PgJournal

    def _load(self, cur: Any, state: JournalState, run_id: str, fence: bool) -> dict[str, Any]:
        raise NotImplementedError  # PgJournal

    def append(self, records: Sequence[Record], *, sync: bool = True) -> None:
        raise NotImplementedError  # PgJournal

    def _mutate(self, run_id: str, build: Callable[[RunEntry], Record]) -> None:
        """Write the record ``build`` makes from the run's current state (resolve, reset...)."""
        if self._held:
            self._flush()

        def mutate(conn: Any) -> None:
            state = JournalState()
            try:
                with conn.transaction():
                    cur = conn.cursor()
                    self._load(cur, state, run_id, fence=True)
                    entry = state.runs.get(run_id)
                    if entry is None:
                        raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
                    rec = build(entry)
                    if state.check(rec, self.session):
                        state.apply(rec)
                        project(cur, [rec])
                    cur.execute("UPDATE runs SET rev = rev + 1 WHERE run_id = %s", [run_id])
            finally:
                self._cache.pop(run_id, None)

        self._run(mutate)
        self._poke()

    def resolve_marker(
        self, run_id: str, marker: str | int, resolution: str, by: str, comment: str | None = None
    ) -> None:
        self._mutate(run_id, lambda e: resolve_record(e, marker, resolution, by, comment))

    def set_budget(
        self, run_id: str, by: str, *, usd_micros: int | None = None, tokens: int | None = None
    ) -> None:
        self._mutate(run_id, lambda e: budget_record(run_id, e.epoch, usd_micros, tokens, by))

    def rearm_step(self, run_id: str, by: str, step: str | int | None = None) -> None:
        self._mutate(run_id, lambda e: rearm_record(e, step, by))

    def reset_run(self, run_id: str, by: str, comment: str | None = None) -> None:
        self._mutate(run_id, lambda e: reset_record(e, by, comment))

    def cache_put(
        self, key: str, fn: str, encoded: Encoded, cost_micros: int, expires: float | None
    ) -> None:
        self.append([cache_record(key, fn, *encoded, cost_micros, expires)], sync=False)

    def gc(self, *, older_than: float, statuses: Sequence[str] = ("completed",)) -> int:
        def gc(conn: Any) -> int:
            with conn.transaction():
                cur = conn.cursor()
                doomed = [
                    r[0]
                    for r in cur.execute(
                        "SELECT run_id FROM runs r WHERE status = ANY(%(st)s) AND updated < "
                        f"%(before)s AND workflow NOT LIKE 'langgraph:%%' AND NOT "
                        f"{_reads.LEASE_ALIVE} FOR UPDATE",
                        {"st": list(statuses), "before": older_than, "ttl": self.ttl},
                    ).fetchall()
                ]
                for table in ("steps", "events", "approvals", "board", "runs"):
                    cur.execute(f"DELETE FROM {table} WHERE run_id = ANY(%s)", [doomed])
                return len(doomed)

        return self._run(gc)
