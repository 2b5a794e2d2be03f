"""Who may read a journal and talk to its owner: file modes and the peer check of each client.

A journal holds step outputs, arguments and approvals, and its owner accepts writes; another
local user must get neither unless a group is configured (``share_with_group``, see
``journal._config.share_group``). The owner therefore runs with a umask of ``077`` (``007``
with a group), so every file it or DuckDB creates (log segments, the DuckDB file and its WAL,
the socket, the lock and pid files) is the user's alone whatever the umask it inherited, and
it checks each connection's uid with ``SO_PEERCRED`` in case a socket's mode was loosened.
"""

from __future__ import annotations

import grp
import os
import pwd
import socket
import struct
from pathlib import Path

from letitloop.errors import ConfigError
from letitloop.journal._config import JournalPaths, share_group

SHARE_FIX = (
    "only the user who runs a journal's owner may use it; to share a journal with a group, set "
    '[tool.letitloop] share_with_group = "GROUP" (or LIL_SHARE_GROUP) for its owner'
)
_CRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def share_gid(paths: JournalPaths) -> int | None:
    """The configured sharing group's id, or None; a group that does not exist is an error."""
    name = share_group(paths.db)
    if name is None:
        return None
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise ConfigError(
            f"share_with_group names the group {name!r}, which does not exist on this machine",
            fix="create the group (groupadd) or correct the setting",
        ) from None


def private_umask(gid: int | None) -> None:
    """Make everything this process creates from now on private (or shared with ``gid``)."""
    os.umask(0o007 if gid is not None else 0o077)


def protect(path: Path, gid: int | None) -> None:
    """Give a file this owner created the mode the setting asks for (and the group)."""
    if gid is None:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
        return
    os.chown(path, -1, gid)
    os.chmod(path, 0o770 if path.is_dir() else 0o660)


def protect_existing(paths: JournalPaths, gid: int | None) -> None:
    """Correct the modes of a journal's files made before this owner (an older version, or
    another umask): the DuckDB file and WAL, the lock, the owner's log and the log segments."""
    wal = paths.db.with_name(paths.db.name + ".wal")
    candidates = [paths.db, wal, paths.lock, paths.owner_log, paths.log_dir]
    if paths.log_dir.is_dir():
        candidates += sorted(paths.log_dir.iterdir())
    for path in candidates:
        try:
            protect(path, gid)
        except FileNotFoundError:
            pass


def write_private(path: Path, text: str) -> None:
    """Write a small file atomically with mode 0600 (under the owner's umask)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def refusal(sock: socket.socket, gid: int | None) -> str | None:
    """None if the peer may use this journal (same user, root, or a member of ``gid``)."""
    try:
        pid, uid, peer_gid = _CRED.unpack(
            sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
        )
    except OSError as exc:
        return f"the journal owner could not tell who connected ({exc.strerror})"
    me = os.getuid()
    if uid in (me, 0):
        return None
    if gid is not None and (peer_gid == gid or _member(uid, gid)):
        return None
    return (
        f"the journal owner (uid {me}) refuses a connection from uid {uid} (pid {pid}): "
        "this journal is not shared with other users"
    )


def _member(uid: int, gid: int) -> bool:
    try:
        user = pwd.getpwuid(uid)
    except KeyError:
        return False
    return gid in os.getgrouplist(user.pw_name, user.pw_gid)
