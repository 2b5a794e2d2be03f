"""The owner's append-only log: where a write becomes durable before it is acknowledged.

A DuckDB commit costs several times a bare fsync, so the owner acknowledges a write once its
record is in this log (one ``fdatasync`` per batch of concurrent writers: group commit) and
folds records into DuckDB in the background. The log is a directory of segment files named
after the position (LSN, a global byte offset) of their first byte. Each frame is
``<u32 length><u32 crc32(length bytes + payload)><payload>``; a short or corrupt frame at the
end of the last segment is a torn write that was never acknowledged, and is cut off.

Segments are opened with ``O_DSYNC``: each ``write()`` returns once its data is durable, which
is one system call where ``write`` + ``fdatasync`` would be two (system calls are the larger
part of a step's cost on a virtual machine). Every write is therefore synced, so the owner
batches what need not be durable yet (see ``Owner._commit``).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from letitloop.kernel._errors import JournalError

HEADER = struct.Struct("<II")
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_DSYNC
SEGMENT_BYTES = 8 << 20  # folded segments are deleted whole: small ones keep the log small


def frame(payload: bytes) -> bytes:
    """A log frame; the CRC covers the length too, so a garbled header is caught."""
    n = struct.pack("<I", len(payload))
    return HEADER.pack(len(payload), zlib.crc32(payload, zlib.crc32(n))) + payload


class Log:
    """Segments ``<lsn>.wal`` in one directory. Only the owner's event loop appends."""

    def __init__(self, path: Path, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.path = path
        self.segment_bytes = segment_bytes
        self.start = 0
        self.size = 0
        self.fd = -1
        path.mkdir(parents=True, exist_ok=True)

    def segments(self) -> list[int]:
        return sorted(int(n[:-4]) for n in os.listdir(self.path) if n.endswith(".wal"))

    def _name(self, start: int) -> Path:
        return self.path / f"{start:020d}.wal"

    def recover(self, folded_lsn: int) -> tuple[list[tuple[int, bytes]], int]:
        """Payloads after ``folded_lsn`` as (end lsn, payload), torn tail cut; open for appends."""
        segs = self.segments() or [folded_lsn]
        out: list[tuple[int, bytes]] = []
        torn = 0
        pos = 0
        for i, start in enumerate(segs):
            with open(self._name(start), "ab+") as f:  # "ab+" also creates the first segment
                end = f.seek(0, 2)
                pos = min(max(folded_lsn - start, 0), end)
                f.seek(pos)
                data = f.read()
            ok_until = 0
            for off, payload in _frames(data):
                out.append((start + pos + off, payload))
                ok_until = off
            if ok_until < len(data):
                if i != len(segs) - 1:
                    raise JournalError(
                        f"journal log segment {self._name(start)} is corrupt at byte "
                        f"{pos + ok_until}, before later segments",
                        fix="restore the journal from a backup, or run `lil journal doctor` to "
                        "see what can be salvaged",
                    )
                os.truncate(self._name(start), pos + ok_until)
                torn += 1
            pos += ok_until
        self.start, self.size = segs[-1], pos
        self.fd = os.open(self._name(self.start), _APPEND_FLAGS)
        os.fsync(self.fd)  # a truncation must be durable before new appends
        _fsync_dir(self.path)
        return out, torn

    def append(self, buf: bytes) -> int:
        """Write a batch of frames durably (one synced write, usually) and return the end LSN.

        An exception here (EIO, ENOSPC) must end the owner: after a failed sync the page cache
        cannot be trusted, so it is never retried.
        """
        if self.size >= self.segment_bytes:
            self._rotate()
        view = memoryview(buf)
        while view:
            view = view[os.write(self.fd, view) :]
        self.size += len(buf)
        return self.start + self.size

    @property
    def end(self) -> int:
        return self.start + self.size

    def _rotate(self) -> None:
        os.close(self.fd)
        self.start, self.size = self.start + self.size, 0
        self.fd = os.open(self._name(self.start), _APPEND_FLAGS | os.O_CREAT | os.O_EXCL, 0o666)
        _fsync_dir(self.path)  # the new segment's name must be durable

    def drop_folded(self, folded_lsn: int) -> None:
        """Delete sealed segments whose every record is already in DuckDB."""
        segs = self.segments()
        for start, nxt in zip(segs, segs[1:], strict=False):
            if nxt <= folded_lsn:
                os.remove(self._name(start))

    def seal(self, folded_lsn: int) -> None:
        """At a clean stop with everything folded: start an empty segment, drop the rest."""
        if folded_lsn != self.end or self.size == 0:
            return
        self._rotate()
        self.drop_folded(folded_lsn)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _frames(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Yield (end offset, payload) of each intact frame; stop at the first bad one."""
    off = 0
    while off + HEADER.size <= len(data):
        n, crc = HEADER.unpack_from(data, off)
        body = data[off + HEADER.size : off + HEADER.size + n]
        if len(body) != n or zlib.crc32(body, zlib.crc32(data[off : off + 4])) != crc:
            return
        off += HEADER.size + n
        yield off, body


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
