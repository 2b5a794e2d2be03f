"""The DuckDB owner's write path: requests decoded without a Python call per map (and exactly as
strictly as before), frames written from where they are (``writev``), requests split or joined
by the socket, a bounded fold lag (back-pressure), and the client's kernel-bounded waits.

Real parts throughout: real log files, a real owner process, SIGKILL, raw sockets."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest

from letitloop import durable, step
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb import _wire
from letitloop.journal.duckdb._client import OwnerJournal
from letitloop.journal.duckdb._link import Link as _Link
from letitloop.journal.duckdb.owner import _log, _requests
from letitloop.journal.duckdb.owner._log import Log, frame
from letitloop.journal.duckdb.owner._requests import BadRequest
from tests.conftest import _kill_owner
from tests.helpers import wait_gone


def _step_rec(run: str, pos: int, out: bytes) -> dict[str, Any]:
    rec = {"k": "ok", "run": run, "epoch": 1, "pos": pos, "att": 1, "kind": "step"}
    rec.update(name=f"s{pos}", fp="0" * 32, ts=time.time(), codec="json", out=out, next=None)
    return rec


# -- decoding -------------------------------------------------------------------------------------


def test_the_fast_decoder_returns_what_the_strict_one_does() -> None:
    requests = [
        {"op": "hello", "session": "me/1"},
        {"op": "append", "recs": [_step_rec("r", i, b'"x"' * i) for i in range(5)], "id": 3},
        {"op": "append", "recs": [_step_rec("r", 1, b"y" * 200_000)], "ack": False},
        {"op": "open_run", "run": "r", "wf": "w", "key": "k", "args": ["json", b"[1]"]},
        {"op": "events", "after": 0, "limit": 10, "run": None, "id": 2**40},
    ]
    for req in requests:
        body = _wire.pack(req)[4:]
        assert _requests.decode(body) == req
        assert _requests.decode(memoryview(body)) == req


def _p(value: Any) -> bytes:
    return bytes(msgpack.packb(value, use_bin_type=True))


def test_a_key_twice_is_refused_at_any_depth() -> None:
    rec = _p(_step_rec("r", 1, b"x"))
    assert rec[0] == 0x8C  # a map of 12 pairs
    twice = b"\x8d" + rec[1:] + _p("pos") + _p(2)  # 13 pairs: "pos" again
    body = b"\x82" + _p("op") + _p("append") + _p("recs") + b"\x91" + twice
    assert msgpack.unpackb(body)["recs"][0]["pos"] == 2  # what a lenient decoder would take
    with pytest.raises(BadRequest, match="same key twice"):
        _requests.decode(body)
    with pytest.raises(BadRequest, match="same key twice"):
        _requests.decode(b"\x82" + _p("op") + _p("stats") + _p("op") + _p("stats"))


def test_a_wider_encoding_than_needed_is_still_accepted() -> None:
    """Another encoder may write 7 as a uint64: not canonical, so the strict decoder reads it."""
    body = b"\x82" + _p("op") + _p("stats") + _p("id") + b"\xcf" + (7).to_bytes(8, "big")
    assert _requests.decode(body) == {"op": "stats", "id": 7}
    with pytest.raises(BadRequest, match="extension type"):
        _requests.decode(b"\x81" + _p("op") + b"\xd4\x05\x00")


# -- the log --------------------------------------------------------------------------------------


def test_frames_written_with_writev_are_the_same_bytes(tmp_path: Path) -> None:
    """Large payloads are written uncopied; the bytes on disk are the frames joined (the log's
    format is unchanged, so logs of either version open with either)."""
    payloads = [b"a" * 10, os.urandom(200_000), b"b" * 100, os.urandom(70_000), b"c"]
    payloads += [os.urandom(20_000) for _ in range(600)]  # more buffers than one writev takes
    log = Log(tmp_path / "log")
    log.recover(0)
    end = log.append_frames([_log.frame_parts(p) for p in payloads])
    log.close()
    disk = b"".join(frame(p) for p in payloads)
    assert end == len(disk)
    segment = (tmp_path / "log").glob("*.wal")
    assert next(segment).read_bytes() == disk
    again = Log(tmp_path / "log")
    records, torn = again.recover(0)
    again.close()
    assert torn == 0
    assert [p for _, p in records] == payloads
    assert records[-1][0] == end


# -- a real owner ---------------------------------------------------------------------------------


def test_big_outputs_round_trip_and_replay(journal_path: Path) -> None:
    sizes = [100 * 1024, 1 << 20, 5]
    ran: list[int] = []

    def produce(n: int) -> str:
        ran.append(n)
        return "z" * n

    @durable(journal=str(journal_path), run_id="big", name="big")
    def wf() -> list[int]:
        return [len(step(f"s{i}", produce, n)) for i, n in enumerate(sizes)]

    assert wf() == sizes
    assert ran == sizes
    assert wf() == sizes  # replayed from the journal: nothing ran again
    assert ran == sizes
    fresh = OwnerJournal(journal_path)  # another connection reads what the owner wrote
    try:
        (run,) = fresh.list_runs(workflow="big")
        attempts = fresh.get_run(run.run_id).attempts
        assert [a.status for a in attempts] == ["completed"] * 3
        assert fresh.stats()["output_bytes"] >= sum(sizes)
    finally:
        fresh.close()


def _raw(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(10)
    sock.connect(str(JournalPaths(path).socket))
    return sock


def test_requests_split_and_joined_by_the_socket(journal_path: Path) -> None:
    client = OwnerJournal(journal_path)
    try:
        sock = _raw(journal_path)
        stream = _wire.Stream(sock)
        hello = _wire.pack({"op": "hello", "session": "raw/1", "id": 1})
        for piece in (hello[:2], hello[2:5], hello[5:]):  # the length header split, then the body
            sock.sendall(piece)
            time.sleep(0.05)
        assert stream.recv()["re"] == 1
        big = _wire.pack({"op": "cache_get", "id": 2, "key": "y" * 300_000})
        two = _wire.pack({"op": "stats", "id": 3}) + _wire.pack({"op": "stats", "id": 4})
        sock.sendall(big[:100_000])
        time.sleep(0.05)
        sock.sendall(big[100_000:] + two)  # the rest of one request and two more, at once
        replies = [stream.recv() for _ in range(3)]
        assert [r["re"] for r in replies] == [2, 3, 4]
        assert replies[0] == {"ok": True, "entry": None, "re": 2}
        assert replies[1]["ok"] and replies[2]["ok"]
        sock.close()
    finally:
        client.close()


def _steps(path: Path, run_id: str, n: int) -> None:
    @durable(journal=str(path), run_id=run_id, name="lag")
    def wf() -> int:
        return sum(step(f"s{i}", lambda i=i: i) for i in range(n))

    assert wf() == n * (n - 1) // 2


def _replayed_after_sigkill(path: Path) -> int:
    """SIGKILL the owner (nothing more is folded), start another: what it replays from its log
    is what DuckDB had not folded yet."""
    pid = OwnerJournal(path).owner_pid
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid, what=f"the killed owner {pid} to end")
    fresh = OwnerJournal(path)
    try:
        assert fresh.owner_pid != pid
        replayed = int(fresh.stats()["replayed"])
        (run,) = fresh.list_runs(workflow="lag")
        assert len(fresh.get_run(run.run_id).attempts) == 400  # nothing acknowledged was lost
        return replayed
    finally:
        fresh.close()


@pytest.mark.timeout(300)
def test_back_pressure_bounds_how_far_duckdb_lags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With folds by time switched off, 800 acknowledged records all wait for DuckDB; with a lag
    bound of 100, the owner stops reading requests at 100 until the database thread took them,
    so a crash (or a read) finds at most about 100 to fold."""
    monkeypatch.setenv("LIL_OWNER_FOLD_DELAY", "3600")
    unbounded = tmp_path / "a" / "journal.duckdb"
    bounded = tmp_path / "b" / "journal.duckdb"
    try:
        _steps(unbounded, "lagged", 400)
        assert _replayed_after_sigkill(unbounded) >= 800  # every step start and completion
        monkeypatch.setenv("LIL_OWNER_MAX_FOLD_LAG", "100")
        _steps(bounded, "lagged", 400)
        assert _replayed_after_sigkill(bounded) <= 110
        stats = OwnerJournal(bounded).stats()
        assert stats["replayed"] <= 110
    finally:
        _kill_owner(unbounded)
        _kill_owner(bounded)


# -- the client's link ----------------------------------------------------------------------------


def test_a_link_waits_in_the_kernel_and_times_out_at_its_limit(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s"))
    server.listen(1)
    got: list[bytes] = []

    def serve() -> None:
        peer, _ = server.accept()
        got.append(peer.recv(1000))  # the first request: no answer
        got.append(peer.recv(1000))
        peer.sendall(_wire.pack({"re": 99, "ok": True}))  # a late reply to an earlier request
        time.sleep(0.2)
        peer.sendall(_wire.pack({"re": 2, "ok": "me"}))
        time.sleep(1)
        peer.close()

    threading.Thread(target=serve, daemon=True).start()
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(tmp_path / "s"))
    link = _Link(sock)
    assert sock.gettimeout() is None  # no poll() before each send and recv
    t = time.monotonic()
    with pytest.raises(TimeoutError):
        link.call({"op": "stats"}, 0.3)
    waited = time.monotonic() - t
    assert 0.3 <= waited < 3.0, waited
    assert link.call({"op": "stats"}, 5.0)["ok"] == "me"  # another id's reply is passed over
    link.close()
    server.close()
