"""``python -S -m letitloop.journal.duckdb.owner --journal PATH``: become a journal's owner.

Started by the first client that finds no owner (``duckdb._client``), detached in its own
session. It wins an exclusive ``flock`` on ``<journal>.lock`` (a loser waits briefly in case the
holder is shutting down, then exits), replays the log and serves until stopped or idle.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import sys
import time
from pathlib import Path

from letitloop.errors import LetItLoopError
from letitloop.journal._config import JournalPaths, env_float, make_journal_dir
from letitloop.journal.duckdb import _files
from letitloop.journal.duckdb.owner._log import disk_full
from letitloop.journal.duckdb.owner._loop import Owner


def _take_lock(paths: JournalPaths, wait: float) -> int | None:
    """Win the election: an exclusive flock, waiting a little in case the holder is leaving."""
    make_journal_dir(paths.root)
    fd = _files.open_regular(paths.lock, os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                os.close(fd)
                return None
            if _serving(paths):
                os.close(fd)
                return None
            time.sleep(0.02)


def _serving(paths: JournalPaths) -> bool:
    """Whether an owner answers on the journal's socket."""
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(str(paths.socket))
        return True
    except OSError:
        return False
    finally:
        s.close()


USAGE = (
    "usage: python -m letitloop.journal.duckdb.owner --journal PATH [--ready-fd FD]\n"
    "  --journal PATH  the journal's DuckDB file\n"
    "  --ready-fd FD   written to once listening (the client that started this owner waits)"
)


def _arguments(argv: list[str]) -> tuple[str, int] | str:
    """(journal, ready fd) from the command line, or what is wrong with it. Parsed by hand:
    argparse (with gettext, locale and shutil under it) costs every cold start several ms."""
    journal, ready_fd = None, -1
    args = list(argv)
    while args:
        flag = args.pop(0)
        name, eq, value = flag.partition("=")
        if name not in ("--journal", "--ready-fd"):
            return f"unrecognized argument {flag!r}"
        if not eq:
            if not args:
                return f"{name} needs a value"
            value = args.pop(0)
        if name == "--journal":
            journal = value
        elif not value.lstrip("-").isdigit():
            return f"--ready-fd must be a file descriptor number, not {value!r}"
        else:
            ready_fd = int(value)
    if journal is None:
        return "the argument --journal is required"
    return journal, ready_fd


def main(argv: list[str] | None = None) -> int:
    """Take the journal's lock and serve it; 0 when another owner already serves it."""
    parsed = _arguments(sys.argv[1:] if argv is None else argv)
    if isinstance(parsed, str):
        print(f"{USAGE}\nerror: {parsed}", file=sys.stderr, flush=True)
        return 2
    journal, ready_fd = parsed
    sys.setswitchinterval(0.0005)  # the loop must get the GIL back quickly from the db thread
    import gc

    gc.set_threshold(50_000, 20, 100)  # the live state is many small dicts: collect rarely
    paths = JournalPaths(Path(journal).resolve())
    try:  # a daemon must not hold its starter's working directory (it may be removed)
        os.chdir(paths.root)
    except OSError:
        pass
    try:
        _files.private_umask(_files.share_gid(paths))  # before any file is made
    except LetItLoopError as exc:
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr, flush=True)
        return 2
    lock_fd = _take_lock(paths, wait=10.0)
    if lock_fd is None:
        print("another owner serves this journal; exiting", flush=True)
        return 0
    try:
        owner = Owner(paths, env_float("LIL_OWNER_IDLE", 300.0))
    except LetItLoopError as exc:  # said plainly: clients show the end of this log to people
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr, flush=True)
        return 2
    except Exception as exc:
        full = disk_full(exc)
        if full is None:
            raise
        print(
            f"error: no space left on the device holding the journal {paths.db} ({full}); "
            f"every acknowledged record is kept in its log\n  fix: free space on the disk of "
            f"{paths.root} (`df -h {paths.root}`), then run the workflow again",
            file=sys.stderr,
            flush=True,
        )
        return 2
    owner.serve(ready_fd=ready_fd)
    os.close(lock_fd)  # released only after DuckDB is closed
    return 0


if __name__ == "__main__":
    sys.exit(main())
