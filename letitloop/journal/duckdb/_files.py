"""Who may read a journal and talk to its owner: file modes and the peer check of each client.

A journal holds step outputs, arguments and approvals, and its owner accepts writes; another
local user must get neither unless a group is configured (``share_with_group``, see
``journal._config.share_group``). The owner therefore runs with a umask of ``077`` (``007``
with a group), so every file it or DuckDB creates (log segments, the DuckDB file and its WAL,
the socket, the lock and pid files) is the user's alone whatever the umask it inherited, and
it checks each connection's uid with ``SO_PEERCRED`` in case a socket's mode was loosened.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import socket
import stat
import struct
from pathlib import Path

from letitloop.errors import ConfigError, JournalError
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
    """Give a file this owner created the mode the setting asks for (and the group); a link
    is left alone (its target is not the journal's)."""
    if path.is_symlink():
        return
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


def write_private(path: Path, text: str | bytes) -> None:
    """Write a small file atomically with mode 0600 (under the owner's umask): into a new
    temporary file (whatever was at its name is removed first, never opened), then renamed."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        view = memoryview(text.encode() if isinstance(text, str) else text)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(tmp, path)


# -- files opened by name ---------------------------------------------------------------------
# Every file of a journal is opened without following a link and without blocking (a FIFO
# would block open() for ever), then checked to be a regular file of this user's: anything else
# at one of its names (a FIFO, a device, a link, another user's file) is refused, naming it.


def open_regular(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` of a journal file, refused unless it is a regular file of this user's."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refused(path, "a symbolic link") from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise refused(path, "a FIFO") from None
        raise
    try:
        check_stat(path, os.fstat(fd))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path) -> bytes:
    """The bytes of a journal file (see ``open_regular``)."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_existing(path: Path) -> None:
    """Refuse what is at ``path`` unless it is a regular file of this user's or nothing: for
    files another library opens by name (DuckDB's), checked just before it does."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    check_stat(path, st)


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFDIR: "a directory", stat.S_IFSOCK: "a socket"}
_KINDS |= {stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}


def check_stat(path: Path, st: os.stat_result) -> None:
    """Refuse a link, anything but a regular file, and another user's file."""
    if stat.S_ISLNK(st.st_mode):
        raise refused(path, "a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        what = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        raise refused(path, what)
    if st.st_uid != os.geteuid():
        raise refused(path, f"a file of uid {st.st_uid}, not this user's (uid {os.geteuid()})")


def refused(path: Path, what: str) -> JournalError:
    """The error for a journal file that is not what the journal put there."""
    return JournalError(
        f"{path} is {what}, not a regular file of this user's: the journal will not open it",
        fix=f"move it aside (mv {path} {path}.suspect) and look at what made it; the journal "
        "writes its own files again",
    )


def identity(paths: JournalPaths) -> list[int]:
    """The journal on disk: device and inode of its directory and of its lock file. An owner
    tells its clients in its hello; a client compares it with what it finds at its path, so it
    never talks to the owner of a journal that was deleted, moved or replaced."""
    root, lock = os.stat(paths.root), os.stat(paths.lock)
    return [root.st_dev, root.st_ino, lock.st_dev, lock.st_ino]


def foreign(paths: JournalPaths, hello: dict[str, object]) -> str | None:
    """Why the owner that said ``hello`` does not serve the journal at ``paths`` (None if it
    does)."""
    try:
        here = identity(paths)
    except OSError as exc:
        return f"the journal's files at {paths.root} are gone ({exc.strerror})"
    if hello.get("files") != here:
        return (
            f"the owner (pid {hello.get('pid')}) serves another journal than the one now at "
            f"{paths.db} (it was deleted, moved or replaced since that owner started)"
        )
    return None


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
