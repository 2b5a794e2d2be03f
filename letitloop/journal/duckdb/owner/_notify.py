"""The DuckDB owner's notifier: a thread that turns folded events into webhooks (``_outbox``).

It uses its own cursor on the owner's DuckDB connection (a cursor per thread is safe) and writes
only the ``outbox`` tables, so it never conflicts with the database thread's folds. The first
scan runs before the owner serves anyone, so its cursor starts at the end of what recovery
folded: an owner killed between an event and its delivery finds the row (or the event, if the
scan had not reached it) when it starts again, and delivers it then.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from letitloop.journal._contract import EventInfo
from letitloop.journal._outbox import (
    KINDS,
    NotifyConfig,
    Outbox,
    list_notices,
    load_config,
    retry_sql,
)

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal.duckdb.owner._store import Store

PERIOD = 0.5  # seconds between scans when nothing wakes the notifier
KICKED = 3.0  # seconds the owner stays up after an event that may notify, to scan it


class Notifier:
    def __init__(self, store: Store, cfg: NotifyConfig | None) -> None:
        self.cur = store.db.cursor()
        self.lock = threading.Lock()  # the cursor is this thread's, and the CLI's reads wait
        self.cfg = cfg
        self.wake = threading.Event()
        self.stopped = threading.Event()
        self.asks: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[Any], None]]]
        self.asks = queue.SimpleQueue()
        for ddl in _outbox_ddl():
            self.cur.execute(ddl)
        self.pending = False  # a notification waits for a retry: the owner stays up for it
        self.kicked = 0.0
        self.outbox = (
            Outbox(cfg, store.journal_id, self._sql, self._atomic, self._events, self._head)
            if cfg is not None
            else None
        )
        if self.outbox is not None:
            self.outbox.scan()
        self.thread = threading.Thread(target=self._loop, name="lil-notifier", daemon=True)
        self.thread.start()

    def _sql(self, query: str, params: list[Any]) -> list[tuple[Any, ...]]:
        self.cur.execute(query, params)
        try:
            return self.cur.fetchall()
        except Exception:  # a statement without a result
            return []

    def _atomic(self, fn: Callable[[], Any]) -> Any:
        self.cur.execute("BEGIN")
        try:
            out = fn()
            self.cur.execute("COMMIT")
            return out
        except BaseException:
            self.cur.execute("ROLLBACK")
            raise

    def _events(self, after: int, limit: int) -> list[EventInfo]:
        kinds = ", ".join(f"'{k}'" for k in KINDS)
        rows = self._sql(
            "SELECT seq, run_id, kind, position, attempt, name, ts, data FROM events "
            f"WHERE seq > ? AND kind IN ({kinds}) ORDER BY seq LIMIT ?",
            [after, limit],
        )
        return [
            EventInfo(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]) if r[7] else {})
            for r in rows
        ]

    def _head(self) -> int:
        rows = self._sql("SELECT coalesce(max(seq), 0) FROM events", [])
        return int(rows[0][0]) if rows else 0

    def kick(self) -> None:
        """An event that may notify was journaled: scan soon (it is folded within ms)."""
        self.kicked = time.monotonic()
        self.wake.set()

    @property
    def busy(self) -> bool:
        """Whether the owner must stay up: a notification waits for a (re)try, or an event
        that may notify was journaled too recently to be scanned yet."""
        recent = time.monotonic() - self.kicked < KICKED
        return self.outbox is not None and (self.pending or recent)

    def ask(self, fn: Callable[[], Any], done: Callable[[Any], None]) -> None:
        """Run ``fn`` on the notifier's thread (it owns the cursor) and pass its result on."""
        self.asks.put((fn, done))
        self.wake.set()

    def notices(self, state: str | None, limit: int) -> Any:
        return list_notices(self._sql, state, limit)

    def retry(self, key: str) -> None:
        self._sql(retry_sql(), [key])
        self.wake.set()

    def _loop(self) -> None:
        while not self.stopped.is_set():
            timeout = PERIOD
            self.wake.wait(timeout)
            self.wake.clear()
            self._answer()
            if self.outbox is None:
                continue
            try:
                self.outbox.pump(self._answer)
                self.pending = self.outbox.pending()
            except Exception:  # DuckDB busy or a receiver's odd answer: the next round retries
                pass

    def _answer(self) -> None:
        while not self.asks.empty():
            fn, done = self.asks.get()
            try:
                done({"ok": True, "value": fn()})
            except Exception as exc:
                done({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]})

    def close(self) -> None:
        self.stopped.set()
        self.wake.set()
        self.thread.join(timeout=5)
        self.cur.close()


def _outbox_ddl() -> tuple[str, ...]:
    from letitloop.journal._outbox import OUTBOX_DDL

    return OUTBOX_DDL


def start(store: Store, journal_db: Path) -> Notifier:
    """The owner's notifier; it delivers only when notifications are configured (a bad
    configuration is told in the owner's log and turns them off, not the journal)."""
    import sys

    from letitloop.errors import LetItLoopError

    try:
        cfg = load_config(journal_db.parent)
    except LetItLoopError as exc:
        print(f"error: notifications are off: {exc.message}\n  fix: {exc.fix}", file=sys.stderr)
        cfg = None
    return Notifier(store, cfg)
