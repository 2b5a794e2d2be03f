"""MCP over stdin and stdout, bounded: the transport a coding agent starts ``lil mcp`` with.

Unlike a plain line reader, this one never holds more than ``Limits.max_message`` bytes of a
message: a longer line is skipped to its end and answered with a JSON-RPC error (naming the
request's id when it is near the start). Messages are written without blocking the event loop,
through a queue of ``Limits.out_queue`` messages, and at most ``Limits.in_flight`` requests are
read ahead of their answers; a client that has read nothing for
``Limits.write_seconds`` is dropped (for stdio: the server stops, saying why on stderr), so a
client that never reads costs a bounded amount of memory. While serving, fd 0 reads
``/dev/null`` and fd 1 writes to stderr, so nothing else in the process can corrupt the wire.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from letitloop.mcp._options import Limits

CHUNK = 65536
ID_NEAR_START = re.compile(rb'"id"\s*:\s*("(?:[^"\\]{0,64})"|-?\d{1,18})')


class ClientGone(Exception):
    """The client stopped reading (or closed its end): the connection is dropped."""


class InFlight:
    """The requests read and not yet answered: at most ``most``; past that the reader waits, so
    a client that sends and never reads holds a bounded number of answers, not one per request."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.ids: set[tuple[str, Any]] = set()
        self.changed = anyio.Event()

    async def admit(self, message: Any) -> None:
        if type(message).__name__ == "JSONRPCNotification":
            if message.method == "notifications/cancelled":  # never answered: its slot is free
                self.done((message.params or {}).get("requestId"))
            return
        if type(message).__name__ != "JSONRPCRequest":
            return
        while len(self.ids) >= self.most:
            await self.changed.wait()
        self.ids.add(_key(message.id))

    def done(self, ident: Any) -> None:
        key = _key(ident)
        if key in self.ids:
            self.ids.discard(key)
            self.changed.set()
            self.changed = anyio.Event()


def _key(ident: Any) -> tuple[str, Any]:
    return (type(ident).__name__, ident)


def _private_fds() -> tuple[int, int]:
    """Take the wire: duplicates of fds 0 and 1 for the transport, and fd 0 to /dev/null, fd 1
    to stderr for everything else."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    for fd in (wire_in, wire_out):
        os.set_blocking(fd, False)
    return wire_in, wire_out


def _error_line(raw: bytes, code: int, message: str) -> bytes:
    """A JSON-RPC error for a message that could not be read, with its id if one is visible."""
    found = ID_NEAR_START.search(raw[:512])
    ident: Any = None
    if found:
        ident = json.loads(found.group(1))
    body = {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
    return json.dumps(body).encode() + b"\n"


async def _read_lines(
    fd: int,
    limits: Limits,
    into: MemoryObjectSendStream[Any],
    out: MemoryObjectSendStream[Any],
    flight: InFlight,
) -> None:
    """Messages from ``fd``, one a line, each at most ``max_message`` bytes."""
    buffer = b""
    skipping: bytes | None = None  # the start of an over-long line being skipped
    async with into:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return  # the client closed stdin: the session ends
            buffer += chunk
            while True:
                end = buffer.find(b"\n")
                if end < 0:
                    if len(buffer) > limits.max_message:
                        skipping = skipping or buffer[:512]
                        buffer = b""
                    break
                line, buffer = buffer[:end], buffer[end + 1 :]
                if skipping is not None or len(line) > limits.max_message:
                    head = skipping if skipping is not None else line[:512]
                    skipping = None
                    said = f"message over {limits.max_message} bytes: refused unread"
                    await out.send(_error_line(head, types.INVALID_REQUEST, said))
                    continue
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception:
                    await out.send(_error_line(line, types.PARSE_ERROR, "not a JSON-RPC message"))
                    continue
                await flight.admit(message)
                await into.send(SessionMessage(message))


async def _write_all(fd: int, data: bytes, seconds: float) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            written = 0
        except (BrokenPipeError, OSError) as exc:
            raise ClientGone(f"its end of the pipe is closed ({exc.strerror})") from None
        view = view[written:]
        if view:
            try:
                with anyio.fail_after(seconds):
                    await anyio.wait_writable(fd)
            except TimeoutError:
                raise ClientGone(f"it read nothing for {seconds:g} s") from None


async def _write_lines(
    fd: int, limits: Limits, source: MemoryObjectReceiveStream[Any], flight: InFlight
) -> None:
    async with source:
        async for item in source:
            answered = None
            if isinstance(item, SessionMessage):
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                data = text.encode() + b"\n"
                if type(item.message).__name__ in ("JSONRPCResponse", "JSONRPCError"):
                    answered = getattr(item.message, "id", None)
            else:
                data = item
            await _write_all(fd, data, limits.write_seconds)
            if answered is not None:
                flight.done(answered)


@asynccontextmanager
async def bounded_stdio(
    limits: Limits,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[Any]]]:
    """The server's (read, write) streams over this process's stdin and stdout. Raises
    ``ClientGone`` out of the block when the client stops reading."""
    wire_in, wire_out = _private_fds()
    read_send, read_recv = anyio.create_memory_object_stream[Any](limits.out_queue)
    write_send, write_recv = anyio.create_memory_object_stream[Any](limits.out_queue)
    errors = write_send.clone()
    flight = InFlight(limits.in_flight)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_lines, wire_in, limits, read_send, errors, flight)
            tg.start_soon(_write_lines, wire_out, limits, write_recv, flight)
            yield read_recv, write_send
            tg.cancel_scope.cancel()
    finally:
        for fd in (wire_in, wire_out):
            try:
                os.close(fd)
            except OSError:
                pass


def say(text: str) -> None:
    """A line on stderr (the only channel a stdio server has for people)."""
    print(f"lil mcp: {text}", file=sys.stderr, flush=True)
