"""The owner's wire format: each message is a little-endian u32 length and a msgpack map.

Requests carry ``op``; replies carry ``ok`` and either the result fields or ``error`` (an error's
``to_dict()``), which the client turns back into the same exception class.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import msgpack

PROTOCOL = 1  # bump when a request or reply changes shape
LEN = struct.Struct("<I")
MAX_MESSAGE = 1 << 30


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


def recv(sock: socket.socket) -> Any:
    (n,) = LEN.unpack(recv_exact(sock, 4))
    if n > MAX_MESSAGE:
        raise ConnectionResetError(f"message of {n} bytes exceeds the protocol limit")
    return unpack(recv_exact(sock, n))
