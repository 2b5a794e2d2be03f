"""Pushed events for the PostgreSQL journal: a coalescing notifier and a LISTEN follower.

NOTIFY inside a writing transaction takes a server-wide lock and cost 35-40 % of throughput
(research wave2 §1.3), so writers never notify: after a commit they poke the ``Notifier``, whose
thread sends one ``NOTIFY`` for everything committed in the last few milliseconds. A
``Follower`` thread LISTENs and, on each notification (and every second, for transactions that
rolled back without one), reads the events after its cursor with the commit-ordered rule of
``_reads.VISIBLE``, so a subscriber never misses an event. When its connection breaks (the
server restarted) it reconnects with backoff and hands every subscriber the contract's empty
batch ("re-read") before following again from the same cursor.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from letitloop.journal._contract import EventInfo
from letitloop.journal.postgres import _reads

COALESCE = 0.02  # seconds of commits one NOTIFY covers (pushes arrive well within a second)
SAFETY_READ = 1.0  # a follower re-reads this often even without a notification
ORPHAN_READ = 0.5  # and looks for runs whose holder is gone at most this often


class Notifier:
    """Sends ``NOTIFY channel`` from its own thread and connection, coalescing pokes: those of
    ``delay`` seconds into one NOTIFY (the events' channel), or with ``delay=0`` those that come
    while one is sent (the queue channel, that idle workers wait on: ``_queues``)."""

    def __init__(
        self,
        connect: Callable[[], Any],
        channel: str,
        *,
        delay: float = COALESCE,
        name: str = "lil-pg-notify",
    ) -> None:
        self.connect, self.channel, self.delay = connect, channel, delay
        self.wanted = threading.Event()
        self.closed = False
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def poke(self) -> None:
        if not self.wanted.is_set():  # one wake per COALESCE, however many commits
            self.wanted.set()

    def _loop(self) -> None:
        conn = None
        while not self.closed:
            self.wanted.wait()
            if self.closed:
                break
            if self.delay:
                time.sleep(self.delay)
            self.wanted.clear()
            try:
                if conn is None:
                    conn = self.connect()
                    # a NOTIFY commits a transaction of its own: never wait for its WAL flush
                    conn.execute("SET synchronous_commit TO off")
                conn.execute(f'NOTIFY "{self.channel}"')
            except Exception:  # the server is restarting: the followers re-read when back
                if conn is not None:
                    _close(conn)
                conn = None
                time.sleep(0.2)
        if conn is not None:
            _close(conn)

    def close(self) -> None:
        self.closed = True
        self.wanted.set()


class Subscription:
    """One subscriber of a ``Follower``; ``close`` stops its callbacks."""

    def __init__(
        self, follower: Follower, callback: Callable[[list[EventInfo]], None], run_id: str | None
    ) -> None:
        self.follower, self.callback, self.run_id = follower, callback, run_id

    def close(self) -> None:
        self.follower.remove(self)


class Follower:
    """LISTENs on the journal's channel and feeds new events to its subscriptions."""

    def __init__(self, connect: Callable[[], Any], channel: str, ttl: float = 30.0) -> None:
        self.connect, self.channel, self.ttl = connect, channel, ttl
        # running runs whose holder is gone, as last seen (None: not looked yet)
        self.orphans: set[str] | None = None
        self.looked = 0.0
        self.subs: list[Subscription] = []
        self.lock = threading.Lock()
        self.closed = False
        self.conn: Any = None
        self.cursor = -1
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="lil-pg-follow", daemon=True)
        self.thread.start()
        self.ready.wait(30)

    def add(self, callback: Callable[[list[EventInfo]], None], run_id: str | None) -> Subscription:
        sub = Subscription(self, callback, run_id)
        with self.lock:
            self.subs.append(sub)
        return sub

    def remove(self, sub: Subscription) -> None:
        with self.lock:
            if sub in self.subs:
                self.subs.remove(sub)

    def _listen(self) -> Any:
        conn = self.connect()
        conn.execute(f'LISTEN "{self.channel}"')
        return conn

    def _loop(self) -> None:
        pause = 0.05
        while not self.closed:
            try:
                self.conn = conn = self._listen()
                self.orphans = None  # holders re-take their leases after a server restart
                if self.cursor < 0:
                    self.cursor = _reads.head(conn.cursor())
                else:
                    self._deliver(None)  # reconnected: events may have been missed, re-read
                self.ready.set()
                pause = 0.05
                while not self.closed:
                    self._catch_up(conn)
                    self._interrupted(conn)
                    for _ in conn.notifies(timeout=SAFETY_READ, stop_after=1):
                        pass
                _close(conn)
                self.conn = None
                return
            except Exception as exc:  # lost the server: try again, less and less often
                self.error = exc
                if self.conn is not None:
                    _close(self.conn)
                    self.conn = None
                self.ready.set()
                if self.closed:
                    return
                time.sleep(pause)
                pause = min(1.0, pause * 2)

    def _catch_up(self, conn: Any) -> None:
        while True:
            batch = _reads.events(conn.cursor(), self.cursor, None, 1000)
            if not batch:
                return
            self.cursor = batch[-1].seq
            self._deliver(batch)
            if len(batch) < 1000:
                return

    def _interrupted(self, conn: Any) -> None:
        """Push an ``interrupted`` event (not a journal record) for each running run whose
        holder is newly gone: killed (its advisory lock went with its connection) or silent
        past the lease TTL. The owner process does the same when a client's socket closes."""
        if time.monotonic() - self.looked < ORPHAN_READ:
            return
        self.looked = time.monotonic()
        gone = dict(_reads.orphans(conn.cursor(), self.ttl))
        if self.orphans is not None:
            now = time.time()
            events = [
                EventInfo(self.cursor, run_id, "interrupted", None, None, None, now, {"by": by})
                for run_id, by in gone.items()
                if run_id not in self.orphans
            ]
            if events:
                self._deliver(events)
        self.orphans = set(gone)

    def _deliver(self, batch: list[EventInfo] | None) -> None:
        with self.lock:
            subs = list(self.subs)
        for sub in subs:
            mine = [] if batch is None else [e for e in batch if sub.run_id in (None, e.run_id)]
            if batch is None or mine:
                try:
                    sub.callback(mine)
                except Exception:  # one subscriber's bug must not stop the others' events
                    import traceback

                    traceback.print_exc()

    def close(self) -> None:
        """Stop following: the thread sees it within ``SAFETY_READ`` and closes its connection
        (a connection is never closed from another thread while it waits on it)."""
        self.closed = True
        with self.lock:
            self.subs.clear()


def _close(conn: Any) -> None:
    try:
        conn.close()
    except Exception:
        pass
