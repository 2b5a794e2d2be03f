"""The warm-start snapshot: what a resume needs, so a new owner answers before DuckDB loads.

Loading DuckDB (``import duckdb`` and opening the file) is most of an owner's start-up, and the
first client after a restart waits for it. So at a clean stop, with everything folded and DuckDB
closed, the owner writes ``<journal>.warm``: the unfinished runs it held in memory, each exactly
as ``Store.load_run`` reads it from DuckDB, with the journal's id, schema and fold watermark. The
next owner loads that (msgpack), starts serving those runs, and opens DuckDB in the background.

Nothing read from a journal's directory is trusted unless the journal's key authenticates it:
the file carries an HMAC-SHA256 under the journal's key (kept outside the journal, see
``letitloop._keys``) over everything in it, and names the DuckDB file it describes by path, inode,
size and modification time, and the letitloop version and protocol that wrote it. A snapshot
that is damaged, forged, from another journal or version, or older than the DuckDB file or the
log (anything written after it) is ignored: the owner then starts from DuckDB as before. A
snapshot is used at most once: the owner that loads it deletes it before it serves, so an owner
killed later restarts from DuckDB and its log, never from a snapshot older than its writes.
"""

from __future__ import annotations

import os
import struct
import sys

import msgpack

from letitloop._digest import compare_digest, hmac_sha256
from letitloop._named import named_tuple
from letitloop._version import __version__ as VERSION
from letitloop.errors import JournalError
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb import _files, _wire

# typing, dataclasses and hashlib cost an owner's cold start several ms each: the checker's only
# (the HMAC is the interpreter's own SHA-256: letitloop._digest, byte for byte hmac's)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, NamedTuple
else:
    NamedTuple = object

MAGIC = b"LILWARM1"
_ID_LEN = struct.Struct("<H")
_MAC_LEN = 32
MAX_RUNS = 256  # unfinished runs kept, the most recently updated first
MAX_BYTES = 32 << 20  # and at most this many bytes of them: loading it must stay fast


class Warm(NamedTuple):
    """A verified snapshot: the journal's identity and the runs to serve before DuckDB loads."""

    journal_id: str
    schema: int
    folded_lsn: int
    runs: list[dict[str, Any]]


if not TYPE_CHECKING:
    Warm = named_tuple(Warm)


def path_of(paths: JournalPaths) -> Path:
    return paths.db.with_name(paths.db.name + ".warm")


def _files_id(paths: JournalPaths) -> list[Any]:
    """What identifies the DuckDB file (and its WAL) as they were when the snapshot was made."""
    out: list[Any] = [str(paths.db)]
    for p in (paths.db, paths.db.with_name(paths.db.name + ".wal")):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            out.append(None)
            continue
        out.append([st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns])
    return out


def _key(journal_id: str) -> bytes | None:
    """The journal's key if it exists; never created here (no key: no snapshot is trusted)."""
    from letitloop import _keys
    from letitloop.errors import LetItLoopError

    try:
        if env := os.environ.get(_keys.KEY_ENV):
            return _keys._parse_key(env, f"${_keys.KEY_ENV}")
        path = _keys.key_path(journal_id)
        return _keys._parse_key(_files.read_regular(path).decode("ascii"), str(path))
    except (OSError, UnicodeDecodeError, LetItLoopError):
        return None


def encode(
    paths: JournalPaths,
    key: bytes,
    journal_id: str,
    schema: int,
    folded_lsn: int,
    runs: Sequence[dict[str, Any]],
) -> bytes:
    """The snapshot's bytes: magic, journal id, HMAC, then the msgpack body."""
    kept: list[bytes] = []
    size = 0
    for data in runs[:MAX_RUNS]:
        try:
            packed = msgpack.packb(data, use_bin_type=True)
        except (TypeError, ValueError, OverflowError):
            continue  # a run that does not pack is loaded from DuckDB when touched, as before
        size += len(packed)
        if size > MAX_BYTES:
            break
        kept.append(packed)
    head = {
        "version": VERSION,
        "protocol": _wire.PROTOCOL,
        "journal_id": journal_id,
        "schema": schema,
        "folded_lsn": folded_lsn,
        "files": _files_id(paths),
    }
    body: bytes = msgpack.packb([head, kept], use_bin_type=True)
    jid = journal_id.encode()
    prefix = MAGIC + _ID_LEN.pack(len(jid)) + jid
    mac = hmac_sha256(key, prefix + body)
    return prefix + mac + body


def write(
    paths: JournalPaths,
    journal_id: str,
    schema: int,
    folded_lsn: int,
    runs: Sequence[dict[str, Any]],
) -> None:
    """Write the snapshot atomically (mode 0600): called once DuckDB is closed at a clean stop."""
    from letitloop import _keys

    key = _key(journal_id)
    if key is None:  # none yet (or not a key file: refused, naming it)
        _files.check_existing(_keys.key_path(journal_id))
        key = _keys.load_or_create_key(journal_id)
    data = encode(paths, key, journal_id, schema, folded_lsn, runs)
    _files.write_private(path_of(paths), data)


def take(paths: JournalPaths) -> tuple[Warm | None, str]:
    """Read and delete the snapshot: (the verified snapshot, "") or (None, why it is not used).
    One that cannot be deleted is not used: it would outlive the writes made after it."""
    target = path_of(paths)
    try:
        data = _files.read_regular(target)
    except FileNotFoundError:
        return None, "none"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    except JournalError as exc:  # a FIFO, a link...: left where it is, and said
        print(f"warm-start snapshot refused: {exc.message}", file=sys.stderr, flush=True)
        return None, f"refused: {exc.message}"
    try:
        os.unlink(target)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return None, f"cannot be deleted ({exc.strerror})"
    return verify(paths, data)


def verify(paths: JournalPaths, data: bytes) -> tuple[Warm | None, str]:
    """Check a snapshot's bytes against the journal's key and files; see the module docstring."""
    n = len(MAGIC) + _ID_LEN.size
    if len(data) < n or not data.startswith(MAGIC):
        return None, "not a snapshot"
    (id_len,) = _ID_LEN.unpack_from(data, len(MAGIC))
    if len(data) < n + id_len + _MAC_LEN:
        return None, "truncated"
    try:
        journal_id = data[n : n + id_len].decode()
    except UnicodeDecodeError:
        return None, "bad journal id"
    key = _key(journal_id)
    if key is None:
        return None, "no key for its journal id"
    mac = data[n + id_len : n + id_len + _MAC_LEN]
    body = data[n + id_len + _MAC_LEN :]
    expected = hmac_sha256(key, data[: n + id_len] + body)
    if not compare_digest(mac, expected):
        return None, "bad MAC (damaged or not written with this journal's key)"
    try:
        head, packed = msgpack.unpackb(body, raw=False)
        runs = [msgpack.unpackb(p, raw=False) for p in packed]
        same_writer = head["version"] == VERSION and head["protocol"] == _wire.PROTOCOL
        files, jid = head["files"], head["journal_id"]
        warm = Warm(jid, int(head["schema"]), int(head["folded_lsn"]), runs)
    except (ValueError, TypeError, KeyError, msgpack.UnpackException):
        return None, "unreadable body"
    if not same_writer:
        return None, f"written by letitloop {head['version']} (protocol {head['protocol']})"
    if jid != journal_id:
        return None, "journal id mismatch"
    if files != _files_id(paths):
        return None, "stale: the DuckDB file changed since it was written"
    return warm, ""
