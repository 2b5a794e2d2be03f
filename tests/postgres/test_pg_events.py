"""The PostgreSQL journal's event feed: commit-ordered cursors and pushes across a restart.

Sequence numbers are handed out when a transaction writes, not when it commits, so a reader
that took every committed row would advance its cursor past an event still being committed and
never see it (measured in research wave2 §1.5). The journal hands out only events of
transactions older than every running one: these tests hold a writing transaction open and
check that nothing after it is handed out until it commits, then everything in order.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from letitloop.journal._contract import EventInfo
from letitloop.journal._records import cache_record
from letitloop.journal.postgres._journal import PgJournal
from letitloop.journal.postgres._writes import project


def test_a_cursor_never_skips_an_event_committed_late(pg_dsn: str) -> None:
    journal = PgJournal(pg_dsn)
    journal.append([cache_record("k0", "fn", "json", b"0", 0, None)])
    cursor = journal.events()[-1].seq
    slow = psycopg.connect(journal.where.dsn, autocommit=True)
    slow.execute('SET search_path TO "letitloop"')
    with slow.transaction():  # an earlier writer, still committing
        project(slow.cursor(), [cache_record("k-slow", "fn", "json", b"1", 0, None)])
        journal.append([cache_record("k-fast", "fn", "json", b"2", 0, None)])  # commits first
        assert journal.cache_get("k-fast") is not None  # committed and readable...
        assert journal.events(after=cursor) == []  # ...but not handed out past the open one
    after = journal.events(after=cursor)
    assert [e.data["key"] for e in after] == ["k-slow", "k-fast"]  # both, in seq order
    assert after[0].seq < after[1].seq
    slow.close()
    journal.close()


def test_subscribers_get_pushes_and_a_reread_after_the_server_restarts(
    pg_server: Any, pg_dsn: str
) -> None:
    writer, reader = PgJournal(pg_dsn), PgJournal(pg_dsn)
    batches: list[list[EventInfo]] = []
    got = threading.Condition()

    def on_events(events: list[EventInfo]) -> None:
        with got:
            batches.append(events)
            got.notify_all()

    def wait_for(pred: Any, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        with got:
            while not pred():
                left = deadline - time.monotonic()
                assert left > 0, batches
                got.wait(left)

    sub = reader.subscribe(on_events)
    try:
        t0 = time.monotonic()
        writer.append([cache_record("a", "fn", "json", b"1", 0, None)])
        wait_for(lambda: any(e.data.get("key") == "a" for b in batches for e in b))
        assert time.monotonic() - t0 < 1.0, "a pushed event took more than a second"
        pg_server.restart("immediate")
        wait_for(lambda: [] in batches)  # the contract's "events may have been missed"
        writer.append([cache_record("b", "fn", "json", b"2", 0, None)])  # writer reconnects
        wait_for(lambda: any(e.data.get("key") == "b" for b in batches for e in b))
        keys = [e.data.get("key") for b in batches for e in b]
        assert keys == ["a", "b"]  # nothing twice, nothing skipped
    finally:
        sub.close()
        writer.close()
        reader.close()
