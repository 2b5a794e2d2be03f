"""One connection to a journal's owner: a request, its reply, within a bounded wait.

Client side: never imports duckdb. The wire format is ``_wire``'s.
"""

from __future__ import annotations

import socket
import struct
import time

from letitloop import errors as _errors
from letitloop.errors import LetItLoopError
from letitloop.journal.duckdb import _wire

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any


def raise_error(error: dict[str, Any]) -> None:
    """Raise the error an owner replied with, as the same letitloop class."""
    cls = getattr(_errors, str(error.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, LetItLoopError)):
        cls = _errors.JournalError
    extra = {name: error.get(name) for name in cls.extra_fields}  # the class's own fields
    raise cls(
        str(error.get("message")),
        fix=error.get("fix"),
        run_id=error.get("run_id"),
        step=error.get("step"),
        position=error.get("position"),
        **extra,
    )


class Link:
    """One socket to the owner, one request in flight.

    The socket stays in blocking mode with its wait bounded by the kernel (``SO_RCVTIMEO`` and
    ``SO_SNDTIMEO``), changed only when a call's limit differs by more than a few percent: a
    Python timeout would cost a ``poll`` before every send and receive and an ``ioctl`` per
    change, three to six system calls per step. A call times out at its limit or up to 5 %
    after it, never before.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.count = 0
        self.bound = 0.0  # the kernel's wait bound, in seconds (0: none)
        sock.settimeout(None)

    def _bound(self, left: float | None) -> None:
        """Make each blocking send or receive give up after ``left`` s (or up to 5 % later)."""
        if left is None:
            if self.bound:
                self._set_bound(0.0)
            return
        if not left <= self.bound <= 1.05 * left:
            self._set_bound(max(0.001, 1.02 * left))

    def _set_bound(self, seconds: float) -> None:
        whole = int(seconds)
        value = struct.pack("ll", whole, int((seconds - whole) * 1e6))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
        self.bound = seconds

    def call(self, req: dict[str, Any], timeout: float | None = None) -> Any:
        """The reply to ``req``; ``TimeoutError`` if it takes longer than ``timeout`` s."""
        self.count += 1
        req["id"] = self.count
        data = _wire.pack(req)
        self._check_size(req, data)
        deadline = None if timeout is None else time.monotonic() + timeout
        self._bound(timeout)
        try:
            self.sock.sendall(data)
        except BlockingIOError:  # the bound passed: the owner took nothing for that long
            raise TimeoutError(f"no room to send {req.get('op')!r} within {timeout} s") from None
        while True:
            try:
                msg = _wire.recv(self.sock)
            except BlockingIOError:  # (the link is closed then: a reply may be half read)
                raise TimeoutError(f"no reply to {req.get('op')!r} in {timeout} s") from None
            if msg.get("re", self.count) == self.count:
                return msg  # (an owner older than request ids does not tag replies)
            if deadline is not None:
                self._bound(max(0.001, deadline - time.monotonic()))

    def send(self, req: dict[str, Any], timeout: float | None = None) -> None:
        data = _wire.pack(req)
        self._check_size(req, data)
        self._bound(timeout)
        try:
            self.sock.sendall(data)
        except BlockingIOError:
            raise TimeoutError(f"no room to send {req.get('op')!r} within {timeout} s") from None

    def unbounded(self) -> socket.socket:
        """The socket, waiting as long as it takes (a subscription's pushes come when they come)."""
        self._bound(None)
        return self.sock

    @staticmethod
    def _check_size(req: dict[str, Any], data: bytes) -> None:
        if len(data) - 4 > _wire.MAX_REQUEST:
            raise _errors.JournalError(
                f"a {req.get('op')!r} request of {len(data) - 4} bytes exceeds the journal's "
                f"limit of {_wire.MAX_REQUEST} bytes (a step's output is sent in one request)",
                fix="keep large data outside the journal (a file, object storage) and return "
                "its path or URL from the step",
            )

    def close(self) -> None:
        self.sock.close()
