"""Files inside a task's project, reached so that nothing in the tree can redirect a write.

An agent works in the project and may leave anything there: a symbolic link where a file was,
a link in place of a directory, a FIFO, a forged file under ``.letitloop/tasks/``. Every path
the runner writes, removes or reads back is therefore

- a *tree path*: relative, POSIX, no empty, ``.`` or ``..`` segment, no NUL (``tree_path``);
- reached one directory at a time from a descriptor of the project root, each directory opened
  with ``O_DIRECTORY | O_NOFOLLOW`` (openat-style), so a symlinked parent cannot send the write
  elsewhere; the directory reached is then checked to resolve inside the root;
- opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked to be a regular file (``fstat``) before
  its bytes are used; a link or a FIFO in the way of a restore is removed (never followed)
  and a regular file is created in its place.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from letitloop.tasks._model import TaskStateError

SKIP_DIRS = frozenset(
    {".git", ".hg", ".letitloop", "__pycache__", ".venv", "venv", "node_modules", ".tox"}
    | {".mypy_cache", ".ruff_cache", ".pytest_cache", ".ipynb_checkpoints"}
)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_MAX_PATH = 4096


def tree_path(rel: object, *, state: bool = False) -> str:
    """``rel`` if it names a place inside the project, else ``TaskStateError``.

    A path in the agent's tree (``state=False``) may not pass through a directory snapshots
    skip (``.git``, ``.letitloop``, ...): no snapshot holds one, so only a forged file could.
    """
    if isinstance(rel, str) and inside_tree(rel, state):
        return rel
    raise TaskStateError(
        f"{rel!r} is not a path inside the project (absolute, '..', empty or a skipped "
        "directory): the task runner never reads or writes outside the tree",
        fix="if this came from a file under .letitloop/tasks/, that file was altered: "
        "`lil runs reset lil.task:NAME` starts the task over from a fresh snapshot",
    )


def inside_tree(rel: object, state: bool = False) -> bool:
    """Whether ``rel`` is a tree path (see ``tree_path``)."""
    if not isinstance(rel, str):
        return False
    if not 0 < len(rel) <= _MAX_PATH or "\0" in rel or rel.startswith("/"):
        return False
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return False
    return state or not any(p in SKIP_DIRS for p in parts)


def open_root(root: Path) -> int:
    """A descriptor of the project directory (the caller closes it)."""
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


@contextmanager
def parent_of(
    root: Path, rel: str, *, create: bool, dir_mode: int = 0o777, state: bool = False
) -> Iterator[tuple[int, str] | None]:
    """(descriptor of the directory holding ``rel``, its last name), reached without following
    a link; None when a directory on the way is missing (and ``create`` is false).

    A link, file or anything but a directory on the way is ``TaskStateError``: the restore
    that needs it removes it first (links are entries of the snapshot like files).
    """
    parts = tree_path(rel, state=state).split("/")
    fd = open_root(root)
    try:
        done: list[str] = []
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    yield None
                    return
                os.mkdir(part, dir_mode, dir_fd=fd)
                nxt = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = "/".join([*done, part])
                    raise TaskStateError(
                        f"{where} is not a directory (a symbolic link or a file) on the way to "
                        f"{rel}: the task runner does not follow it",
                        fix=f"put a real directory at {where}, or remove it",
                    ) from None
                raise
            os.close(fd)
            fd = nxt
            done.append(part)
        _check_inside(fd, root, rel)
        yield fd, parts[-1]
    finally:
        os.close(fd)


def _check_inside(fd: int, root: Path, rel: str) -> None:
    """The resolved directory of ``fd`` is the root or below it (a second guard on the chain)."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return  # no /proc: the O_NOFOLLOW chain alone holds
    top = os.path.realpath(root)
    if where != top and not where.startswith(top.rstrip("/") + "/"):
        raise TaskStateError(
            f"{rel} resolves to {where}, outside the project {top}",
            fix="remove whatever redirects it (a bind mount or a link) from the project",
        )


def lstat_at(fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def clear_at(fd: int, name: str, rel: str) -> None:
    """Remove what is at ``name`` (a file, link, FIFO or empty directory), never following it."""
    st = lstat_at(fd, name)
    if st is None:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TaskStateError(
            f"{rel} cannot be removed to put the original back: {exc.strerror}",
            fix=f"remove {rel} by hand and run the task again",
        ) from None


def write_file(root: Path, rel: str, data: bytes) -> None:
    """Put ``data`` at ``rel`` as a regular file: a regular file there is rewritten in place
    (it keeps its mode); a link, FIFO or empty directory there is removed first, never followed."""
    with parent_of(root, rel, create=True) as at:
        assert at is not None
        fd, name = at
        st = lstat_at(fd, name)
        if st is not None and stat.S_ISREG(st.st_mode):
            try:
                out = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            except OSError:
                out = -1  # swapped since the lstat: cleared and created below
            if out >= 0:
                try:
                    now = os.fstat(out)
                    if stat.S_ISREG(now.st_mode) and now.st_ino == st.st_ino:
                        os.ftruncate(out, 0)
                        _write_all(out, data)
                        return
                finally:
                    os.close(out)
        clear_at(fd, name, rel)
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=fd)
        try:
            _write_all(out, data)
        finally:
            os.close(out)


def replace_file(
    root: Path, rel: str, data: bytes, *, state: bool = False, mode: int = 0o666
) -> str:
    """Write ``data`` to ``rel`` atomically (a temporary file beside it, fsync, rename in the
    same directory descriptor: whatever was at ``rel``, a link included, is replaced, not
    followed); return its sha256. ``state``: a runner file under ``.letitloop/`` (private)."""
    dir_mode = 0o700 if state else 0o777
    with parent_of(root, rel, create=True, dir_mode=dir_mode, state=state) as at:
        assert at is not None
        fd, name = at
        tmp = f".{name}.{os.getpid()}.tmp"
        clear_at(fd, tmp, rel)
        out = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            mode,
            dir_fd=fd,
        )
        try:
            _write_all(out, data)
            os.fsync(out)
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        os.fsync(fd)
    return hashlib.sha256(data).hexdigest()


def read_file(root: Path, rel: str, *, limit: int, state: bool = False) -> bytes | None:
    """The bytes of the regular file ``rel`` (None if it does not exist). A link, a FIFO or
    anything but a regular file, or a file over ``limit`` bytes, is ``TaskStateError``."""
    with parent_of(root, rel, create=False, state=state) as at:
        if at is None:
            return None
        fd, name = at
        try:
            f = os.open(name, _READ, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _not_regular(rel, exc.strerror or str(exc)) from None
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode):
                raise _not_regular(rel, "not a regular file")
            if st.st_size > limit:
                raise _not_regular(rel, f"{st.st_size} bytes, more than {limit}")
            return read_fd(f, st.st_size)
        finally:
            os.close(f)


def make_link(root: Path, rel: str, target: str) -> None:
    """Re-create the symbolic link ``rel -> target`` the tree had (whatever is there now is
    removed first); the link is created, never followed."""
    with parent_of(root, rel, create=True) as at:
        assert at is not None
        fd, name = at
        clear_at(fd, name, rel)
        os.symlink(target, name, dir_fd=fd)


def remove(root: Path, rel: str) -> None:
    """Remove ``rel`` (a file or link added since a snapshot); nothing through a link."""
    try:
        with parent_of(root, rel, create=False) as at:
            if at is not None:
                clear_at(at[0], at[1], rel)
    except TaskStateError:
        return  # a parent is a link or a file: nothing of the tree is at rel to remove


def read_fd(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, max(size, 1 << 16))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _not_regular(rel: str, why: str) -> TaskStateError:
    return TaskStateError(
        f"{rel} cannot be read as the task runner's file: {why}",
        fix="it was replaced or damaged: `lil runs reset lil.task:NAME` starts the task over",
    )
