"""One client connection of the owner, and the shape of its replies.

A connection is served by the event loop and written to by the database, query and notifier
threads too: ``Conn.send`` never blocks and queues what the socket does not take now.
"""

from __future__ import annotations

import socket
import threading

from letitloop.errors import LetItLoopError
from letitloop.journal._config import env_float
from letitloop.journal.duckdb import _wire

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

# bytes a client may leave unread (replies, pushes) before it is dropped; one message of any
# size is always queued whole, so this bounds a client that stops reading, not a large reply
MAX_UNREAD = int(env_float("LIL_OWNER_MAX_UNREAD", 4 << 20))
SENT, PENDING, DEAD = 0, 1, 2  # what Conn.send did


class Conn:
    """One client connection: its socket (non-blocking), receive buffer, unsent output, session.

    ``send`` never blocks: the socket takes what it can, the rest waits in ``out`` for the event
    loop to flush when the socket is writable. A client whose unread output passes
    ``MAX_UNREAD`` (a suspended ``lil-tui``, a client that never reads) is dropped instead of
    stalling the owner; a subscriber re-reads what it missed when it reconnects.
    """

    def __init__(self, sock: socket.socket, refused: str | None = None) -> None:
        self.sock = sock
        self.buf = bytearray()  # an unfinished request
        self.partial_since = 0.0  # when it began
        self.out = bytearray()
        self.session: str | None = None
        self.subscribed = False
        self.sub_run: str | None = None
        self.lock = threading.Lock()
        self.alive = True
        self.refused = refused  # why this peer may not use the journal (told at its first request)
        self.writing = False  # registered with the selector for EVENT_WRITE

    def send(self, msg: Any) -> int:
        """Queue ``msg``; SENT if all of it left now, PENDING if some waits, DEAD if dropped."""
        data = _wire.pack(msg)
        with self.lock:
            if not self.alive:
                return DEAD
            if self.out:
                if len(self.out) + len(data) > MAX_UNREAD:
                    self.alive = False  # stopped reading: the event loop drops it
                    return DEAD
                self.out += data
                return PENDING
            try:
                k = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                k = 0
            except OSError:
                self.alive = False
                return DEAD
            if k == len(data):
                return SENT
            self.out += memoryview(data)[k:]
            return PENDING

    def flush(self) -> bool:
        """Write queued output the socket takes now; True once nothing is left (or it died)."""
        with self.lock:
            if not self.alive:
                return True
            try:
                k = self.sock.send(self.out)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                self.alive = False
                return True
            del self.out[:k]
            return not self.out


def reply_to(req: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """Tag a reply with its request's id, so a client can never take one reply for another."""
    if "id" in req:
        reply["re"] = req["id"]
    return reply


def error_reply(exc: BaseException) -> dict[str, Any]:
    """The reply for a failed request: a letitloop error as it is, any other as a JournalError."""
    if isinstance(exc, LetItLoopError):
        return {"ok": False, "error": exc.to_dict()}
    return {
        "ok": False,
        "error": {"type": "JournalError", "message": f"{type(exc).__name__}: {exc}"},
    }
