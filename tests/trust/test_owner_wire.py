"""The owner survives any bytes (issue 14, point 3), shown against a real owner process.

* malformed frames of every shape get an error reply on their own connection, and the owner
  keeps serving a correct client (on the old owner 11 of 12 shapes killed it);
* a length prefix above the owner's limit is refused before any of the body is buffered;
* ``accept()`` failing with EMFILE backs off, keeps serving, and accepts again later;
* a seeded wire fuzzer (random and mutated frames) runs for a bounded time against a live owner
  while a correct client's workflow runs; the owner answers that client throughout.
"""

from __future__ import annotations

import os
import random
import resource
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest

from letitloop import durable, step
from letitloop.journal.duckdb import _wire
from letitloop.journal.duckdb._client import OwnerJournal
from tests.helpers import pid_alive, wait_until
from tests.trust.trust_helpers import raw, reply, rss_kib, start_owner


def _dup_keys(*pairs: tuple[str, Any]) -> bytes:
    """A msgpack map with the keys as given (duplicates included), which packb cannot make."""
    out = bytes([0x80 | len(pairs)])
    for k, v in pairs:
        out += msgpack.packb(k) + msgpack.packb(v)
    return out


def _framed(body: bytes) -> bytes:
    return struct.pack("<I", len(body)) + body


_STEP = {"k": "step", "run": "x", "epoch": 0, "pos": 0, "att": 1, "name": "s", "fp": "f"}
MALFORMED: dict[str, bytes] = {
    "not msgpack": _framed(b"\xc1\xc1\xc1garbage"),
    "truncated msgpack": _framed(msgpack.packb({"op": "runs", "limit": 5})[:-2]),
    "a list, not a map": _framed(msgpack.packb(["op", "runs"])),
    "an integer": _framed(msgpack.packb(7)),
    "no op": _framed(msgpack.packb({"limit": 5})),
    "unknown op": _framed(msgpack.packb({"op": "format_disk"})),
    "op of the wrong type": _framed(msgpack.packb({"op": 3})),
    "field of the wrong type": _framed(msgpack.packb({"op": "append", "recs": "nope"})),
    "records that are not maps": _framed(msgpack.packb({"op": "append", "recs": [1, 2]})),
    "record of an unknown kind": _framed(msgpack.packb({"op": "append", "recs": [{"k": "zz"}]})),
    "record with a wrong field": _framed(
        msgpack.packb({"op": "append", "recs": [{**_STEP, "pos": "zero"}]})
    ),
    "missing field": _framed(msgpack.packb({"op": "open_run", "wf": "w", "key": "k"})),
    "extra field": _framed(msgpack.packb({"op": "runs", "limit": 1, "rm_rf": True})),
    "wrong type inside output": _framed(
        msgpack.packb({"op": "output", "run": 1, "epoch": "a", "pos": None, "att": []})
    ),
    "duplicate keys (the last would stop the owner)": _framed(
        _dup_keys(("op", "runs"), ("op", "stop"))
    ),
    "msgpack extension type": _framed(msgpack.packb({"op": msgpack.ExtType(5, b"xx")})),
    "integer out of every range": _framed(msgpack.packb({"op": "runs", "limit": 2**64 - 1})),
    "deep nesting": _framed(b"\x91" * 5000 + b"\x00"),
    "negative request id": _framed(msgpack.packb({"op": "stats", "id": -1})),
}


def _correct_client_works(path: Path, tag: str) -> None:
    @durable(journal=path, run_id=f"ok-{tag}", name="ok")
    def flow(x: int) -> int:
        return step("double", lambda v: v * 2, x) + step("inc", lambda v: v + 1, x)

    assert flow(5) == 16
    journal = OwnerJournal(path)
    try:
        assert any(r.run_id == f"ok:ok-{tag}" for r in journal.list_runs())
    finally:
        journal.close()


def test_malformed_frames_get_an_error_reply_and_harm_nobody(journal_path: Path) -> None:
    """Each malformed shape: an error reply on that connection; the owner (same pid) then
    serves a correct client's workflow and reads. A request before hello is refused too."""
    journal, pid = start_owner(journal_path)
    try:
        for shape, data in MALFORMED.items():
            sock = raw(journal_path)
            try:
                sock.sendall(data)
                msg = reply(sock)
            finally:
                sock.close()
            assert msg["ok"] is False, shape
            assert msg["error"]["type"] in ("JournalError", "BadRequest"), (shape, msg)
            assert msg["error"]["message"], shape
            assert pid_alive(pid), f"the owner died on {shape!r}"
        sock = raw(journal_path, hello=False)
        try:
            sock.sendall(_wire.pack({"op": "runs", "id": 1}))
            msg = reply(sock)
            assert not msg["ok"] and "hello" in msg["error"]["message"]
        finally:
            sock.close()
        # the same connection goes on after a bad frame
        sock = raw(journal_path)
        try:
            sock.sendall(MALFORMED["unknown op"] + _wire.pack({"op": "stats", "id": 9}))
            assert reply(sock)["ok"] is False
            ok = reply(sock)
            assert ok["ok"] is True and ok["re"] == 9 and ok["stats"]["pid"] == pid
        finally:
            sock.close()
        _correct_client_works(journal_path, "after-malformed")
        assert journal.stats()["pid"] == pid
    finally:
        journal.close()


def test_a_huge_length_prefix_is_refused_before_buffering(journal_path: Path) -> None:
    """A 4 GiB prefix, then 32 MiB of body: the owner replies with an error naming its limit and
    closes that connection; it did not buffer the body (RSS grows < 20 MiB) and serves on."""
    journal, pid = start_owner(journal_path)
    try:
        before = rss_kib(pid)
        sock = raw(journal_path)
        try:
            sock.sendall(struct.pack("<I", 0xFFFFFFF0))
            chunk = b"\x00" * (1 << 20)
            sent = 0
            try:
                for _ in range(32):
                    sock.sendall(chunk)
                    sent += 1
            except OSError:
                pass  # the owner closed the connection: what it should do
            msg = reply(sock)
            assert msg["ok"] is False and str(_wire.MAX_REQUEST) in msg["error"]["message"]
            sock.settimeout(5)
            try:
                rest = sock.recv(100)
            except ConnectionResetError:
                rest = b""
            assert rest == b"", "the connection should be closed after the refusal"
        finally:
            sock.close()
        assert rss_kib(pid) - before < 20 * 1024
        assert pid_alive(pid)
        _correct_client_works(journal_path, "after-huge")
    finally:
        journal.close()


def test_accept_emfile_backs_off_and_keeps_serving(journal_path: Path) -> None:
    """The owner runs out of file descriptors (its RLIMIT_NOFILE lowered to what it uses): it
    keeps answering a connection it already has, and accepts new clients once fds are free."""
    journal, pid = start_owner(journal_path)
    held = raw(journal_path)
    flood: list[socket.socket] = []
    old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    try:
        used = len(os.listdir(f"/proc/{pid}/fd"))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (used + 2, old[1]))
        for _ in range(12):  # queued in the backlog; accepting them all exceeds the limit
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(journal.paths.socket))
            flood.append(s)
        time.sleep(1.0)
        assert pid_alive(pid), "the owner died when accept() failed with EMFILE"
        held.sendall(_wire.pack({"op": "stats", "id": 1}))
        assert reply(held)["stats"]["pid"] == pid
        log = journal.paths.owner_log.read_text(errors="replace")
        assert "accept()" in log and "pausing" in log
    finally:
        for s in flood:
            s.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
        held.close()
    wait_until(
        lambda: len(os.listdir(f"/proc/{pid}/fd")) < 40,
        10,
        what=lambda: f"the owner to close its sockets ({len(os.listdir(f'/proc/{pid}/fd'))} fds)",
        interval=0.005,
    )
    _correct_client_works(journal_path, "after-emfile")
    assert journal.stats()["pid"] == pid
    journal.close()


# -- the fuzzer ---------------------------------------------------------------------------------

FUZZ_SECONDS = 12.0
_WORKER = ["1@h/fuzz", "h", 1, ["fuzzq"], 2, 1.0, 1.0, 30.0, "running", []]
_CORPUS: list[dict[str, Any]] = [
    {"op": "runs", "status": None, "workflow": None, "limit": 10},
    {"op": "run", "run": "fuzz:r"},
    {"op": "events", "after": 0, "run": None, "limit": 5},
    {"op": "run_ids"},
    {"op": "open_run", "run": "fuzz:r", "wf": "fuzz", "key": "r", "lease": True, "args": None},
    {"op": "append", "recs": [dict(_STEP, run="fuzz:r")], "ack": True},
    {"op": "output", "run": "fuzz:r", "epoch": 0, "pos": 0, "att": 1},
    {"op": "subscribe", "run": "fuzz:r"},
    {"op": "cache_get", "key": "k"},
    {"op": "approvals", "status": None, "run": None, "limit": 3},
    {"op": "checkpoints", "thread": "t", "ns": None, "cid": None, "limit": 2},
    {"op": "relock", "runs": ["fuzz:r"]},
    {"op": "release", "run": "fuzz:r"},
    {"op": "resolve", "run": "fuzz:r", "marker": 0, "res": "done", "by": "fuzz"},
    {"op": "hello", "session": "fuzz"},
    {"op": "open_run", "run": "fuzz:r", "wf": "fuzz", "key": "r", "lease": False, "head": True},
    {"op": "rearm", "run": "fuzz:r", "step": 0, "by": "fuzz"},
    {"op": "budget", "run": "fuzz:r", "usd": 5, "tokens": None, "by": "fuzz"},
    {"op": "reset", "run": "fuzz:r", "by": "fuzz"},
    {"op": "results", "runs": ["fuzz:r", "fuzz:other"]},
    {"op": "sql", "sql": "SELECT count(*) FROM runs"},
    {"op": "stats"},
    {"op": "gc", "older_than": 1e9, "statuses": ["completed"]},  # sent as stats (see _mutate)
    {"op": "stop"},  # sent as stats
    {"op": "cache_list", "limit": 3},
    {"op": "proposals", "state": None},
    {"op": "quarantine", "action": None, "lsn": None},
    {"op": "limit", "act": "take", "name": "fuzz", "rpm": 60, "tpm": None, "tokens": 1},
    {"op": "capacity"},
    {"op": "board", "run": "fuzz:1", "key": "k", "history": True},
    {"op": "notices", "state": None, "limit": 3},
    {"op": "notice_retry", "key": "k"},
    {
        "op": "queue",
        "act": "enqueue",
        "spec": ["fuzzq", 2, 1, None, 60.0, False],
        "item": ["fuzz:q", "fuzzq", "fuzz", "q", 0, "queued", 1.0, None, None, 0, None, None]
        + ["mod:fn|hmac=00", ["json", b"[[], {}]"]],
    },
    {"op": "queue", "act": "claim", "worker": _WORKER, "n": 2},
    {"op": "queue", "act": "beat", "worker": _WORKER},
    {"op": "queue", "act": "finish", "wid": "1@h/fuzz", "run": "fuzz:q", "outcome": "completed"},
    {"op": "queue", "act": "items", "queue": "fuzzq", "state": None, "limit": 5},
    {"op": "queue", "act": "workers"},
    {"op": "queue", "act": "pause", "name": "fuzzq", "paused": False},
    {"op": "board", "run": "wf:fuzz", "key": "plan", "history": True},
    {
        "op": "queue",
        "act": "hold",
        "spec": ["fuzzq", None, None, None, 60.0, False],
        "item": ["fuzz:h", "fuzzq", "fuzz", "h", 0, "held", 1.0, None, None, 0, None, None]
        + ["mod:fn|hmac=00", ["json", b"[[], {}]"]],
        "declare": False,
    },
    {"op": "queue", "act": "unhold", "run": "fuzz:h", "outcome": "completed"},
]
_VALUES: list[Any] = [None, True, -1, 0, 2**63, 2**64 - 1, 1.5, float("nan"), "", "x" * 300, b"\0"]
_VALUES += [[], [1, "a"], {}, {"k": "step"}, {"op": "stop"}]


def test_the_fuzzer_corpus_holds_every_operation_the_owner_accepts() -> None:
    """A new owner operation is fuzzed too: the corpus has a well-formed request of each."""
    from letitloop.journal.duckdb.owner._requests import SHAPES, check

    assert {req["op"] for req in _CORPUS} == set(SHAPES)
    for req in _CORPUS:
        check(req)  # each seed is a valid request, so mutations start from real shapes


def _mutate(rng: random.Random) -> bytes:
    """One hostile frame: a corpus request changed at the value or the byte level, or noise."""
    kind = rng.randrange(7)
    req = dict(rng.choice(_CORPUS))
    if kind == 0:  # a field gets a value of another type
        req[rng.choice(list(req))] = rng.choice(_VALUES)
    elif kind == 1:  # a field goes missing
        req.pop(rng.choice(list(req)))
    elif kind == 2:  # an unknown field
        req[rng.choice(["zz", "", "op2", "recs"])] = rng.choice(_VALUES)
    elif kind == 3:  # bytes flipped in a valid body
        body = bytearray(msgpack.packb(req, use_bin_type=True))
        for _ in range(rng.randint(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        return _framed(bytes(body))
    elif kind == 4:  # random noise, sometimes with a plausible length
        noise = rng.randbytes(rng.randint(0, 64))
        return _framed(noise) if rng.random() < 0.7 else noise
    elif kind == 5:  # a duplicate key
        pairs = [*req.items(), ("op", rng.choice(["stop", "gc", "runs"]))]
        return _framed(_dup_keys(*pairs))
    else:  # a lying length prefix
        body = msgpack.packb(req, use_bin_type=True)
        return struct.pack("<I", rng.choice([0, 1, len(body) + 7, 2**31, 2**32 - 1])) + body
    if req.get("op") in ("stop", "gc"):
        req["op"] = "stats"  # a valid stop or gc request is allowed to do what it says
    return _framed(msgpack.packb(req, use_bin_type=True))


@pytest.mark.timeout(120)
def test_wire_fuzzer_never_stops_the_owner_serving_correct_clients(journal_path: Path) -> None:
    """Random and mutated frames on many connections for ~12 s (seeded), while a correct client
    runs durable workflows and reads: every one of its calls succeeds, none waits > 5 s, the
    owner keeps its pid, and thousands of hostile frames were sent."""
    journal, pid = start_owner(journal_path)
    stop = threading.Event()
    problems: list[str] = []
    latencies: list[float] = []
    done = [0]

    def correct_client() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            t0 = time.monotonic()
            try:

                @durable(journal=journal_path, run_id=f"good-{n}", name="good")
                def flow(x: int) -> int:
                    return step("a", lambda v: v + 1, x) + step("b", lambda v: v * 3, x)

                if flow(n) != (n + 1) + 3 * n:
                    problems.append(f"wrong result for run {n}")
                if journal.get_run(f"good:good-{n}").run.status != "completed":
                    problems.append(f"run {n} not completed")
            except Exception as exc:  # every failure is a finding
                problems.append(f"run {n}: {type(exc).__name__}: {exc}")
            latencies.append(time.monotonic() - t0)
            done[0] = n

    rng = random.Random(20261201)
    sent = 0
    worker = threading.Thread(target=correct_client, daemon=True)
    worker.start()
    try:
        # At least FUZZ_SECONDS, and on a slow machine on until enough frames went out (capped).
        t_start = time.monotonic()
        while (elapsed := time.monotonic() - t_start) < FUZZ_SECONDS or (
            sent <= 1200 and elapsed < 4 * FUZZ_SECONDS
        ):
            try:
                sock = raw(journal_path, hello=rng.random() < 0.8, timeout=2)
            except OSError as exc:
                problems.append(f"fuzzer could not connect: {exc}")
                break
            try:
                for _ in range(rng.randint(1, 8)):
                    sock.sendall(_mutate(rng))
                    sent += 1
                # Drain replies for at most 0.1 s: a mutated subscribe can stream the correct
                # client's events without pause, which must not hold the fuzzer on one socket.
                drain_until = time.monotonic() + 0.1
                sock.settimeout(0.05)
                try:
                    while time.monotonic() < drain_until and sock.recv(65536):
                        pass
                except OSError:
                    pass
            except OSError:
                pass  # the owner dropped this connection: allowed
            finally:
                sock.close()
            if not pid_alive(pid):
                problems.append(f"the owner died after {sent} fuzz frames")
                break
    finally:
        stop.set()
        worker.join(30)
    try:
        assert not problems, problems[:5]
        assert sent > 1000, f"only {sent} frames sent"
        assert done[0] >= 5, f"the correct client finished only {done[0]} runs"
        assert max(latencies) < 5.0, f"a correct call waited {max(latencies):.1f} s"
        assert journal.stats()["pid"] == pid
    finally:
        journal.close()
