"""The owner's socket and pid file: binding, accepting (pausing when out of descriptors), and
re-binding when a cleaner removed the socket file."""

from __future__ import annotations

import errno
import json
import os
import selectors
import socket
import sys
import time

from letitloop._version import __version__ as VERSION
from letitloop.journal.duckdb import _files, _wire
from letitloop.journal.duckdb.owner._base import (
    OwnerBase,
)
from letitloop.journal.duckdb.owner._conn import Conn


class Listening(OwnerBase):
    """The listening socket and the files that tell clients where this owner is."""

    def _listen(self) -> socket.socket:
        """Bind the journal's socket (replacing any file at its path: we hold the lock)."""
        sock_path = self.paths.socket
        if sock_path.parent != self.paths.root:  # (a socket in the temporary directory: see
            sock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # JournalPaths)
        try:
            sock_path.unlink()  # a dead owner's socket, or one a cleaner replaced
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(sock_path))
        _files.protect(sock_path, self.share_gid)
        listener.listen(256)
        listener.setblocking(False)
        st = os.stat(sock_path)
        self.socket_id = (st.st_dev, st.st_ino)
        self.socket_checked = time.monotonic()
        self.sel.register(listener, selectors.EVENT_READ)
        return listener

    def _write_pid_file(self) -> None:
        info = {"pid": os.getpid(), "version": VERSION, "protocol": _wire.PROTOCOL}
        _files.write_private(
            self.paths.pid_file, json.dumps(info | {"socket": str(self.paths.socket)})
        )

    def _check_socket(self) -> None:
        """If the journal's files were removed or replaced (its project deleted or moved),
        exit at once. Else, if the socket file was deleted or replaced (a cleaned temporary
        directory), bind it again, so new clients find this owner instead of starting one that
        cannot win the lock."""
        self.socket_checked = time.monotonic()
        self._check_files()
        try:
            st = os.stat(self.paths.socket)
            if (st.st_dev, st.st_ino) == self.socket_id:
                return
        except OSError:
            pass
        print("the socket file was removed or replaced; listening on a new one", flush=True)
        old = self.listener
        if self.accept_paused_until == 0.0:
            self.sel.unregister(old)
        old.close()
        self.accept_paused_until = 0.0
        self.listener = self._listen()
        if not self.paths.pid_file.exists():
            self._write_pid_file()

    def _check_files(self) -> None:
        """Exit at once if a file of the journal is gone or replaced (device and inode): this
        owner's journal is not at its path any more, and serving, re-binding its socket or
        writing its files there would resurrect it, or steal a newer owner's clients. What was
        acknowledged is in the log, wherever the journal went; nothing is written on the way."""
        for path, known in self.file_ids.items():
            try:
                st = os.stat(path)
                now: tuple[int, int] | None = (st.st_dev, st.st_ino)
            except OSError:
                now = None
            if now != known:
                what = "removed" if now is None else "replaced"
                print(
                    f"the journal's {path} was {what} (its project deleted or moved?): this "
                    "owner stops serving it and exits",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(0)

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                raise
            # out of file descriptors: stop accepting for a while, keep serving the others
            self.accept_backoff = min(1.0, max(0.05, self.accept_backoff * 2))
            self.accept_paused_until = time.monotonic() + self.accept_backoff
            self.sel.unregister(self.listener)
            print(f"accept(): {exc.strerror}; pausing {self.accept_backoff:.2f} s", flush=True)
            return
        self.accept_backoff = 0.0
        client.setblocking(False)
        self.conns[client] = Conn(client, refused=_files.refusal(client, self.share_gid))
        self.sel.register(client, selectors.EVENT_READ)
