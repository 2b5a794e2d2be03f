"""The owner's append-only log: where a write becomes durable before it is acknowledged.

A DuckDB commit costs several times a bare fsync, so the owner acknowledges a write once its
record is in this log (one ``fdatasync`` per batch of concurrent writers: group commit) and
folds records into DuckDB in the background. The log is a directory of segment files named
after the position (LSN, a global byte offset) of their first byte. Each frame is
``<u32 length><u32 crc32(length bytes + payload)><payload>``. Only a damaged *final* frame of
the last segment is a torn write (never acknowledged), and is cut off. A damaged frame with an
intact one after it is corruption: acknowledged records follow it, so recovery refuses to
serve, naming the segment and offset, and ``lil journal doctor --salvage`` keeps every intact
record. DuckDB's fold watermark (``folded_lsn``) is checked against the log too: a log that
ends before it, or starts after it, lost a directory or segment after a crash.

Segments are opened with ``O_DSYNC``: each ``write()`` returns once its data is durable, which
is one system call where ``write`` + ``fdatasync`` would be two (system calls are the larger
part of a step's cost on a virtual machine). Every write is therefore synced, so the owner
batches what need not be durable yet (see ``Owner._commit``).
"""

from __future__ import annotations

import errno
import os
import re
import struct
import zlib
from pathlib import Path

from letitloop.errors import DiskFullError, JournalError
from letitloop.journal.duckdb._files import open_regular

HEADER = struct.Struct("<II")
_LEN = struct.Struct("<I")
# frames larger than this are written from where they are (writev), smaller ones joined first
_GATHER = 16 << 10
_IOV_MAX = 512  # buffers per writev call (Linux allows 1024)
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_DSYNC
SEGMENT_BYTES = 8 << 20  # folded segments are deleted whole: small ones keep the log small
_FULL = (errno.ENOSPC, errno.EDQUOT)
TYPE_CHECKING = False  # typing (and dataclasses) cost an owner's cold start: the checker's only
if TYPE_CHECKING:
    from collections.abc import Iterator

SALVAGE_FIX = (
    "stop every process using this journal, then run `lil journal doctor --salvage`: it keeps "
    "every intact record, moves the damaged log aside and says what was lost; or restore the "
    "journal from a backup"
)


class Damage:
    """Something wrong with the log that cutting a torn tail cannot explain."""

    def __init__(self, segment: Path, offset: int, what: str) -> None:
        self.segment = segment
        self.offset = offset  # byte offset in that segment
        self.what = what

    def describe(self) -> str:
        return f"{self.segment} at byte {self.offset}: {self.what}"


class Scan:
    """What a log holds after ``folded_lsn``: intact records, a torn tail, and any damage."""

    def __init__(self, segments: list[int] | None = None) -> None:
        self.records: list[tuple[int, bytes]] = []  # (end lsn, payload)
        self.torn: tuple[Path, int] | None = None  # the last segment's torn final frame starts
        self.damage: list[Damage] = []
        self.segments: list[int] = segments if segments is not None else []
        self.end = 0  # the log's end lsn once the torn tail is cut


def frame(payload: bytes) -> bytes:
    """A log frame; the CRC covers the length too, so a garbled header is caught."""
    head, _ = frame_parts(payload)
    return head + payload


def frame_parts(payload: bytes) -> tuple[bytes, bytes]:
    """A log frame as its header and its payload, so a large payload is written uncopied."""
    n = _LEN.pack(len(payload))
    return HEADER.pack(len(payload), zlib.crc32(payload, zlib.crc32(n))), payload


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

    def scan(self, folded_lsn: int) -> Scan:
        """Read every segment after ``folded_lsn`` without changing anything (see ``Scan``)."""
        result = Scan(segments=self.segments())
        segs = result.segments
        if not segs:
            if folded_lsn > 0:
                result.damage.append(
                    Damage(
                        self.path, 0, f"the log is gone, but DuckDB folded it up to {folded_lsn}"
                    )
                )
            result.end = folded_lsn
            return result
        if segs[0] > folded_lsn:
            result.damage.append(
                Damage(
                    self._name(segs[0]),
                    0,
                    f"the log starts at {segs[0]}, after what DuckDB folded ({folded_lsn}): "
                    "a segment was deleted",
                )
            )
        for i, start in enumerate(segs):
            last = i == len(segs) - 1
            with open(open_regular(self._name(start), os.O_RDONLY), "rb") as f:
                size = f.seek(0, 2)
                pos = min(max(folded_lsn - start, 0), size)
                f.seek(pos)
                data = f.read()
            nxt = segs[i + 1] if not last else None
            if nxt is not None and start + size != nxt:
                result.damage.append(
                    Damage(
                        self._name(start),
                        size,
                        f"the segment ends at lsn {start + size}, the next starts at {nxt}",
                    )
                )
            if last and start + size < folded_lsn:
                result.damage.append(
                    Damage(
                        self._name(start),
                        size,
                        f"the segment was cut short: it ends at lsn {start + size}, but DuckDB "
                        f"folded records up to {folded_lsn}",
                    )
                )
            records, bad, tail = _walk(data)
            result.records += [(start + pos + end, payload) for end, payload in records]
            for off in bad:
                result.damage.append(
                    Damage(
                        self._name(start), pos + off, "a damaged record with intact ones after it"
                    )
                )
            if tail is not None and not last:
                result.damage.append(
                    Damage(self._name(start), pos + tail, "a damaged record before later segments")
                )
            elif tail is not None:  # a damaged final frame: a write torn by a crash
                result.torn = (self._name(start), pos + tail)
            if last:
                result.end = start + pos + (tail if tail is not None else len(data))
        return result

    def recover(self, folded_lsn: int) -> tuple[list[tuple[int, bytes]], int]:
        """Payloads after ``folded_lsn`` as (end lsn, payload), torn tail cut; open for appends.

        Raises ``JournalError`` naming the segment and offset on corruption or a lost segment:
        serving would silently drop acknowledged records (their steps would run again).
        """
        scan = self.scan(folded_lsn)
        if scan.damage:
            first = scan.damage[0]
            more = f" (and {len(scan.damage) - 1} more problem(s))" if scan.damage[1:] else ""
            raise JournalError(
                f"the journal's log is corrupt: {first.describe()}{more}; the owner will not "
                "serve it, since acknowledged records would be lost",
                fix=SALVAGE_FIX,
            )
        torn = 0
        if scan.torn is not None:
            os.truncate(scan.torn[0], scan.torn[1])
            torn = 1
        created = not scan.segments
        if created:
            os.close(open_regular(self._name(folded_lsn), os.O_WRONLY | os.O_CREAT, 0o666))
            scan.segments = [folded_lsn]
        self.start = scan.segments[-1]
        self.size = os.path.getsize(self._name(self.start))
        out = scan.records
        self.fd = open_regular(self._name(self.start), _APPEND_FLAGS)
        if torn or created:  # (what the log held was written synced: nothing else to sync)
            os.fsync(self.fd)  # a truncation must be durable before new appends
            fsync_dir(self.path)
        return out, torn

    def append_frames(self, frames: list[tuple[bytes, bytes]]) -> int:
        """Write frames (header, payload) durably, as ``append`` does, without joining large
        payloads into one buffer first: one synced ``writev`` for a batch, usually."""
        parts: list[bytes] = []
        small: list[bytes] = []
        for head, payload in frames:
            if len(payload) < _GATHER:
                small += (head, payload)
                continue
            if small:
                parts.append(b"".join(small))
                small = []
            parts += (head, payload)
        if small:
            parts.append(b"".join(small))
        if len(parts) == 1:
            return self.append(parts[0])
        return self.append(parts)

    def append(self, buf: bytes | list[bytes]) -> int:
        """Write a batch of frames durably (one synced write, usually) and return the end LSN.

        An exception here must end the owner: after a failed sync (EIO) the page cache cannot be
        trusted, so it is never retried. A full disk (ENOSPC) raises ``DiskFullError`` naming
        the segment, once whatever part of the batch was written is cut off again.
        """
        size = len(buf) if isinstance(buf, bytes) else sum(len(b) for b in buf)
        try:
            if self.size >= self.segment_bytes:
                self._rotate()
            if isinstance(buf, bytes):
                view = memoryview(buf)
                while view:
                    view = view[os.write(self.fd, view) :]
            else:
                _writev_all(self.fd, buf)
        except OSError as exc:
            if exc.errno not in _FULL:
                raise
            os.ftruncate(self.fd, self.size)  # nothing of this batch is kept (frees space)
            segment = self._name(self.start)
            raise DiskFullError(
                f"no space left on the device holding the journal's log ({segment}): a write "
                f"of {size} bytes was refused ({exc.strerror}); nothing of it was kept",
                fix=f"free space on the disk of {self.path.parent} (see `df -h "
                f"{self.path.parent}`), then run the workflow again: it continues after its "
                "last acknowledged step",
            ) from None
        self.size += size
        return self.start + self.size

    @property
    def end(self) -> int:
        return self.start + self.size

    def _rotate(self) -> None:
        os.close(self.fd)
        self.start, self.size = self.start + self.size, 0
        flags = _APPEND_FLAGS | os.O_CREAT | os.O_EXCL
        self.fd = open_regular(self._name(self.start), flags, 0o666)
        fsync_dir(self.path)  # the new segment's name must be durable

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


def disk_full(exc: BaseException) -> str | None:
    """If ``exc`` (or what caused it) is a full disk, the text that says so; else None.

    DuckDB reports ENOSPC as a TransactionException ("Could not write file ...: No space left
    on device"), and then fails the rollback too, so the whole chain is searched."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return None
        text = str(seen)
        if isinstance(seen, OSError) and seen.errno in _FULL:
            return f"{seen.strerror}: {seen.filename or ''}".strip(": ")
        if "No space left on device" in text or "Disk quota exceeded" in text:
            return text.splitlines()[0][:500]
        seen = seen.__cause__ or seen.__context__
    return None


def _frames(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Yield (end offset, payload) of each intact frame; stop at the first bad one."""
    return _frames_from(data, 0)


def _intact_at(data: bytes, off: int) -> bool:
    if off + HEADER.size > len(data):
        return False
    n, crc = HEADER.unpack_from(data, off)
    if off + HEADER.size + n > len(data):
        return False
    body = data[off + HEADER.size : off + HEADER.size + n]
    return bool(zlib.crc32(body, zlib.crc32(data[off : off + 4])) == crc)


# a record's payload is a msgpack map: the byte after a frame's header is one of these
_CANDIDATE = re.compile(rb"(?s)(?=.{8}[\x80-\x8f\xde\xdf])")


def _next_intact(data: bytes, start: int) -> int | None:
    """The offset of the first intact frame at or after ``start`` (searched only after damage;
    the regular expression finds candidate offsets without a Python loop per byte)."""
    for m in _CANDIDATE.finditer(data, start):
        if _intact_at(data, m.start()):
            return m.start()
    return None


def _walk(data: bytes) -> tuple[list[tuple[int, bytes]], list[int], int | None]:
    """Every intact frame of a segment's bytes, with the offsets of damaged frames that have an
    intact frame after them, and the offset of a damaged final frame (None if there is none)."""
    records: list[tuple[int, bytes]] = []
    bad: list[int] = []
    off = 0
    while True:
        for end, payload in _frames_from(data, off):
            records.append((end, payload))
            off = end
        if off >= len(data):
            return records, bad, None
        later = _next_intact(data, off + 1)
        if later is None:
            return records, bad, off
        bad.append(off)
        off = later


def _frames_from(data: bytes, off: int) -> Iterator[tuple[int, bytes]]:
    """Yield (end offset, payload) of each intact frame from ``off``; stop at the first bad one."""
    while off + HEADER.size <= len(data):
        n, crc = HEADER.unpack_from(data, off)
        body = data[off + HEADER.size : off + HEADER.size + n]
        if len(body) != n or zlib.crc32(body, zlib.crc32(data[off : off + 4])) != crc:
            return
        off += HEADER.size + n
        yield off, body


def _writev_all(fd: int, bufs: list[bytes]) -> None:
    """Write every buffer in order (a short write continues where it stopped)."""
    views = [memoryview(b) for b in bufs if b]
    while views:
        k = os.writev(fd, views[:_IOV_MAX])
        while views and k >= len(views[0]):
            k -= len(views[0])
            views.pop(0)
        if k:
            views[0] = views[0][k:]


def fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (a file created or renamed in it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
