"""The owner's wire format: each message is a little-endian u32 length and a msgpack map.

Requests carry ``op``; replies carry ``ok`` and either the result fields or ``error`` (an error's
``to_dict()``), which the client turns back into the same exception class.
"""

from __future__ import annotations

import socket
import struct

import msgpack

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 3  # bump when a request or reply changes shape or meaning
LEN = struct.Struct("<I")
MAX_MESSAGE = 1 << 30  # the largest reply a client accepts
# the largest request an owner accepts: a longer length prefix is refused before any byte of
# its body is buffered (a step's output travels in one request, so this bounds outputs too)
MAX_REQUEST = 256 << 20
RESULTS_PER_REQUEST = 1000  # run ids one ``results`` request may name (replies stay small)


def pack(obj: Any) -> bytes:
    body: bytes = msgpack.packb(obj, use_bin_type=True)
    return LEN.pack(len(body)) + body


def unpack(body: bytes | bytearray | memoryview) -> Any:
    return msgpack.unpackb(body, raw=False, strict_map_key=False)


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionResetError("the journal owner closed the connection")
        got += k
    return buf


class Stream:
    """Messages from a socket that may send several unasked (a subscription's pushes)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def recv(self) -> Any:
        while True:
            if len(self.buf) >= 4:
                (n,) = LEN.unpack_from(self.buf)
                if len(self.buf) >= 4 + n:
                    msg = unpack(bytes(self.buf[4 : 4 + n]))
                    del self.buf[: 4 + n]
                    return msg
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionResetError("the journal owner closed the connection")
            self.buf += data


def recv(sock: socket.socket) -> Any:
    """The reply to a request: usually one recv call. Only for links where nothing else arrives
    (one request in flight, no pushes), since it may read past one message otherwise."""
    head = sock.recv(65536)
    if not head:
        raise ConnectionResetError("the journal owner closed the connection")
    if len(head) < 4:
        head += recv_exact(sock, 4 - len(head))
    (n,) = LEN.unpack_from(head)
    if n > MAX_MESSAGE:
        raise ConnectionResetError(f"message of {n} bytes exceeds the protocol limit")
    if len(head) - 4 < n:
        return unpack(head[4:] + recv_exact(sock, n - (len(head) - 4)))
    return unpack(memoryview(head)[4 : 4 + n])
