"""Plumbing for the owner-robustness tests: raw sockets to a live owner, its pid, its memory.

The worker scripts and ``Worker`` come from ``tests/crash`` (one place for launched processes),
whether a process lives and bounded waits from ``tests/helpers.py``.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb import _wire
from letitloop.journal.duckdb._client import OwnerJournal


def start_owner(path: Path) -> tuple[OwnerJournal, int]:
    """A client of its own (not the process-wide one) and the pid of the owner it reached."""
    journal = OwnerJournal(path)
    return journal, journal.owner_pid


def raw(path: Path, hello: bool = True, timeout: float = 5.0) -> socket.socket:
    """A bare connection to the owner, having said hello unless told not to."""
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(timeout)
    sock.connect(str(JournalPaths(path).socket))
    if hello:
        sock.sendall(_wire.pack({"op": "hello", "session": f"raw/{time.monotonic_ns()}"}))
        assert _wire.recv(sock)["ok"]
    return sock


_streams: dict[int, tuple[socket.socket, _wire.Stream]] = {}


def reply(sock: socket.socket, timeout: float = 5.0) -> Any:
    """The next message on a bare connection, or raise on timeout or close."""
    sock.settimeout(timeout)
    held = _streams.get(id(sock))
    if held is None or held[0] is not sock:
        held = _streams[id(sock)] = (sock, _wire.Stream(sock))
    return held[1].recv()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")
