"""A stop with queries queued, and the owner's memory under hostile readers (issue 35, points 6
and 13), on real owner processes.

On the old owner ``lil journal stop`` with SQL queries queued aborted the process after 5 s
(``ResourceInUseException``, then ``terminate called ... FATAL``) and wrote no warm snapshot; a
``runs`` or ``events`` read built one reply of the whole history; a negative ``limit`` came back
as DuckDB's Binder Error; and each client could leave a partial request of up to 256 MB
buffered, so a handful of clients could take gigabytes from the owner.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any

import pytest

from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb import _wire
from letitloop.journal.duckdb._client import stop_owner
from tests.helpers import wait_gone, wait_until
from tests.trust.trust_helpers import raw, reply, rss_kib, start_owner

SLOW = "SELECT count(*) FROM range(1000000000000)"  # runs until interrupted (or 30 s)


def _ready_lines(journal_path: Path) -> list[dict[str, object]]:
    lines = JournalPaths(journal_path).owner_log.read_text().splitlines()
    return [json.loads(line[len("READY ") :]) for line in lines if line.startswith("READY ")]


@pytest.mark.timeout(120)
def test_a_stop_with_queries_queued_interrupts_them_and_writes_its_snapshot(
    journal_path: Path,
) -> None:
    """Eight slow queries are taken (one runs, seven wait), then ``lil journal stop``: the owner
    exits cleanly within seconds, every asker is told the owner stopped, the log shows no
    abort, and the next owner starts warm from the snapshot the stop wrote."""
    paths = JournalPaths(journal_path)
    journal, pid = start_owner(journal_path)
    journal.close()
    asker = raw(journal_path)
    try:
        for i in range(8):
            asker.sendall(_wire.pack({"op": "sql", "sql": SLOW, "id": 10 + i}))
        time.sleep(1.0)  # the first one runs now, the others wait
        t0 = time.monotonic()
        assert stop_owner(journal_path, timeout=30) == pid
        wait_gone(pid, 30, what="the owner to exit")
        took = time.monotonic() - t0
        answers = [reply(asker, timeout=10) for _ in range(8)]
    finally:
        asker.close()
    log = paths.owner_log.read_text()
    for fatal in ("terminate called", "FATAL", "ResourceInUse", "Traceback"):
        assert fatal not in log, log[-2000:]
    assert took < 15, f"the stop took {took:.1f} s"
    assert sorted(a["re"] for a in answers) == list(range(10, 18))
    for a in answers:
        assert not a["ok"] and "stop" in a["error"]["message"], a
        assert a["error"].get("fix")
    warm = paths.db.with_name(paths.db.name + ".warm")
    assert warm.is_file(), "the stop wrote no warm-start snapshot"
    journal, _ = start_owner(journal_path)  # the next owner uses it
    try:
        assert journal.list_runs() == []
    finally:
        journal.close()
    assert str(_ready_lines(journal_path)[-1]["warm"]).endswith(" runs")


@pytest.mark.timeout(120)
def test_reads_are_capped_and_a_negative_limit_is_refused_plainly(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ``runs`` or ``events`` reply holds at most ``LIL_OWNER_MAX_ROWS`` rows whatever the
    limit asked (the client pages through the rest, so callers still see everything); a
    negative limit is refused saying so, not with DuckDB's Binder Error."""
    monkeypatch.setenv("LIL_OWNER_MAX_ROWS", "50")
    from letitloop.journal.duckdb._client import OwnerJournal

    journal = OwnerJournal(journal_path)
    try:
        _write_runs(journal, 70)
        sock = raw(journal_path)
        try:
            sock.sendall(_wire.pack({"op": "events", "after": 0, "limit": 1 << 60, "id": 1}))
            got = reply(sock, timeout=30)
            assert got["ok"] and len(got["events"]) == 50, len(got.get("events", []))
            sock.sendall(_wire.pack({"op": "runs", "limit": 1 << 60, "id": 2}))
            got = reply(sock, timeout=30)
            assert got["ok"] and len(got["runs"]) == 50, len(got.get("runs", []))
            for op, req in (("runs", {}), ("events", {"after": 0})):
                sock.sendall(_wire.pack({"op": op, "limit": -1, "id": 3} | req))
                got = reply(sock, timeout=30)
                assert not got["ok"], got
                message = got["error"]["message"]
                assert "limit" in message and "-1" in message and "Binder" not in message, got
        finally:
            sock.close()
        # callers asking for everything still get everything, a page at a time
        assert len(journal.list_runs(limit=1 << 30)) == 70
        assert len(journal.events(limit=1 << 30)) == 140
        assert len(journal.list_runs(limit=60)) == 60
        newest = [r.run_id for r in journal.list_runs(limit=1 << 30)]
        assert len(set(newest)) == 70 and newest[0] == "bulk-69"
    finally:
        journal.close()


def _write_runs(journal: object, n: int) -> None:
    """``n`` completed runs (two events each), written the way ``lil journal copy`` writes."""
    records = []
    for i in range(n):
        run_id = f"bulk-{i}"
        start = {"k": "run", "run": run_id, "wf": "bulk", "key": run_id, "epoch": 0, "try": 1}
        start |= {"args": None, "entry": None, "parent": None, "by": "test", "ts": 1000.0 + i}
        done = {"k": "done", "run": run_id, "epoch": 0, "codec": "json", "out": b"1"}
        done |= {"ts": 1000.5 + i, "shown": None}
        records += [start, done]
    journal.import_records(records)  # type: ignore[attr-defined]


@pytest.mark.timeout(180)
def test_partial_requests_are_bounded_in_total(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forty clients each announce a 200 MB request and send 16 MB of it: on the old owner all
    640 MB stayed buffered. The owner keeps at most ``LIL_OWNER_MAX_BUFFERED`` (64 MB here) of
    unfinished requests in total, refuses the clients beyond it saying why, and serves an
    honest client all along; its memory stays bounded."""
    monkeypatch.setenv("LIL_OWNER_MAX_BUFFERED", str(64 << 20))
    journal, pid = start_owner(journal_path)
    before = rss_kib(pid)
    chunk = os.urandom(1 << 20)
    hogs: list[socket.socket] = []
    refused = 0
    try:
        for _ in range(40):
            sock = raw(journal_path, timeout=10)
            hogs.append(sock)
            try:
                sock.sendall(struct.pack("<I", 200 << 20))
                for _ in range(16):
                    sock.sendall(chunk)
            except OSError:  # refused and dropped meanwhile
                refused += 1
            assert journal.list_runs() == []  # the honest client is served
        time.sleep(1.0)
        grown = (rss_kib(pid) - before) // 1024
        assert grown < 250, f"the owner grew by {grown} MB holding partial requests"
        for sock in hogs:  # those over the bound were told why before being dropped
            sock.settimeout(5)
            try:
                data = sock.recv(1 << 16)
            except OSError:
                continue
            if data:
                refused += 1
                assert b"unfinished requests" in data, data[:300]
        assert refused >= 20, refused
        assert journal.stats()["pid"] == pid
    finally:
        for sock in hogs:
            sock.close()
        journal.close()


@pytest.mark.timeout(180)
def test_a_query_that_would_take_all_memory_is_refused(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query building a multi-gigabyte value stops at the owner's DuckDB memory limit
    (``LIL_OWNER_MEMORY_LIMIT``, 256 MB here) with a clear error; the owner's memory stays
    bounded and it goes on serving."""
    monkeypatch.setenv("LIL_OWNER_MEMORY_LIMIT", "256MB")
    journal, pid = start_owner(journal_path)
    try:
        before = rss_kib(pid)
        peak = [before]
        sock = raw(journal_path, timeout=60)
        query = (
            "SELECT max(x) FROM (SELECT string_agg(repeat('x', 1000), '') AS x FROM range(4000000))"
        )
        sock.sendall(_wire.pack({"op": "sql", "sql": query, "id": 5}))
        sock.settimeout(0.1)

        def answer() -> Any:
            peak.append(rss_kib(pid))  # the owner's memory, sampled while it works
            try:
                return reply(sock, timeout=0.2)
            except (TimeoutError, OSError):
                return None

        got = wait_until(answer, 90, what="the owner's answer to the query", interval=0)
        sock.close()
        grown = (max(peak) - before) // 1024
        assert grown < 1024, f"the owner grew by {grown} MB for one query"
        assert not got["ok"] and "memory" in got["error"]["message"].lower(), got
        assert "LIL_OWNER_MEMORY_LIMIT" in got["error"]["fix"], got
        assert journal.stats()["pid"] == pid
    finally:
        journal.close()
