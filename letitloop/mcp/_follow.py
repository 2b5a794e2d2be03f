"""Resource subscriptions: an agent following ``lil://runs/{id}`` is told when the run changes.

The journal pushes (``Journal.subscribe``: the DuckDB owner's push, PostgreSQL's LISTEN/NOTIFY);
this hub keeps one journal subscription per followed run, shared by every client that follows
it, and fans each change out on the server's event loop: to a handshake-era client as
``notifications/resources/updated`` (``resources/subscribe``), to a 2026-era client on its
``subscriptions/listen`` stream. Each client has a bounded queue of pending changes (the same
run's changes coalesce); a client whose queue overflows, or that takes longer than the write
deadline to accept one, is dropped: its subscriptions end, the server and the others go on.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import anyio
import anyio.abc
import anyio.to_thread

from letitloop.errors import ConfigError
from letitloop.mcp._options import Limits

if TYPE_CHECKING:
    from letitloop.journal import EventInfo, Subscription
    from letitloop.mcp._service import Service

log = logging.getLogger("letitloop.mcp")
PREFIX = "lil://runs/"


def run_uri(run_id: str) -> str:
    return PREFIX + quote(run_id, safe="")


def run_of(uri: str) -> str:
    """The run id a ``lil://runs/{id}`` URI names (``ConfigError`` for any other URI)."""
    if not isinstance(uri, str) or not uri.startswith(PREFIX) or len(uri) > 1000:
        raise ConfigError(
            f"not a run resource: {str(uri)[:100]!r}",
            fix=f"name a run as {PREFIX}RUN_ID (list_runs gives the ids)",
        )
    run_id = unquote(uri[len(PREFIX) :])
    if not run_id:
        raise ConfigError("the run resource names no run", fix=f"{PREFIX}RUN_ID")
    return run_id


@dataclass
class Subscriber:
    """One handshake-era client: the runs it follows and the changes it has yet to be told."""

    key: str
    session: Any  # the client's ServerSession (its standalone channel)
    runs: set[str] = field(default_factory=set)
    pending: dict[str, None] = field(default_factory=dict)  # URIs, in order, coalesced
    wake: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = False


class Follow:
    """See the module docstring."""

    def __init__(self, svc: Service, limits: Limits) -> None:
        from mcp.server.subscriptions import InMemorySubscriptionBus

        self.svc = svc
        self.limits = limits
        self.bus = InMemorySubscriptionBus()
        self.subscribers: dict[str, Subscriber] = {}
        self.watched: dict[str, Subscription] = {}
        self.listening: dict[str, int] = {}  # run id -> listen streams following it
        self.dropped = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._publishing: set[asyncio.Task[None]] = set()

    async def run(self, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve subscriptions until cancelled (the transport's lifetime)."""
        self._loop = asyncio.get_running_loop()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._tg = None
            with anyio.CancelScope(shield=True):
                for run_id in list(self.watched):
                    await self._unwatch(run_id, force=True)

    # -- following ---------------------------------------------------------------------------

    async def subscribe(self, key: str, session: Any, uri: str) -> None:
        """A handshake-era client follows the run ``uri`` names (checked to exist)."""
        run_id = await self._resolve(uri)
        sub = self.subscribers.get(key)
        if sub is None or sub.closed:
            sub = self.subscribers[key] = Subscriber(key, session)
            if self._tg is not None:
                self._tg.start_soon(self._sender, sub)
        sub.session = session
        if run_id not in sub.runs:
            if len(sub.runs) >= self.limits.follows:
                raise ConfigError(
                    f"this client follows {len(sub.runs)} runs already, the most there may be",
                    fix="unsubscribe from runs you no longer follow",
                )
            await self._watch(run_id)
            sub.runs.add(run_id)

    async def unsubscribe(self, key: str, uri: str) -> None:
        run_id = run_of(uri)
        sub = self.subscribers.get(key)
        if sub is not None and run_id in sub.runs:
            sub.runs.discard(run_id)
            await self._unwatch(run_id)

    async def listen(self, uris: list[str]) -> list[str]:
        """A 2026-era listen stream follows these runs (as long as ``unlisten`` is not called)."""
        runs: list[str] = []
        try:
            for uri in uris[: self.limits.follows]:
                run_id = await self._resolve(uri)
                await self._watch(run_id)
                runs.append(run_id)
                self.listening[run_id] = self.listening.get(run_id, 0) + 1
        except BaseException:
            await self.unlisten(runs)
            raise
        return runs

    async def unlisten(self, runs: list[str]) -> None:
        for run_id in runs:
            left = self.listening.get(run_id, 0) - 1
            if left <= 0:
                self.listening.pop(run_id, None)
            else:
                self.listening[run_id] = left
            await self._unwatch(run_id)

    async def _resolve(self, uri: str) -> str:
        run_id = run_of(uri)
        journal = self.svc.journal
        return str(await anyio.to_thread.run_sync(journal.find_run, run_id))

    async def _watch(self, run_id: str) -> None:
        if run_id in self.watched:
            return
        if len(self.watched) >= self.limits.follows:
            raise ConfigError(
                f"the server follows {len(self.watched)} runs already, the most it may",
                fix="unsubscribe from runs no longer followed",
            )
        journal = self.svc.journal

        def changed(events: list[EventInfo]) -> None:  # a journal thread
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._changed, run_id)

        sub = await anyio.to_thread.run_sync(lambda: journal.subscribe(changed, run_id=run_id))
        if run_id in self.watched:  # watched meanwhile by another client: keep one
            await anyio.to_thread.run_sync(sub.close)
        else:
            self.watched[run_id] = sub

    async def _unwatch(self, run_id: str, force: bool = False) -> None:
        used = run_id in self.listening or any(run_id in s.runs for s in self.subscribers.values())
        if used and not force:
            return
        sub = self.watched.pop(run_id, None)
        if sub is not None:
            await anyio.to_thread.run_sync(sub.close)

    # -- telling ------------------------------------------------------------------------------

    def _changed(self, run_id: str) -> None:
        """On the event loop: queue the change for each follower (dropping one that is full)."""
        uri = run_uri(run_id)
        for sub in list(self.subscribers.values()):
            if sub.closed or run_id not in sub.runs:
                continue
            sub.pending[uri] = None
            if len(sub.pending) > self.limits.out_queue:
                self._drop(sub, f"{len(sub.pending)} changes waiting")
                continue
            sub.wake.set()
        if run_id in self.listening and self._loop is not None:
            from mcp.server.subscriptions import ResourceUpdated

            # a plain callback of the loop: an asyncio task (the bus's streams are bounded)
            task = self._loop.create_task(self.bus.publish(ResourceUpdated(uri=uri)))
            self._publishing.add(task)
            task.add_done_callback(self._publishing.discard)

    async def _sender(self, sub: Subscriber) -> None:
        while not sub.closed:
            await sub.wake.wait()
            sub.wake = anyio.Event()
            while sub.pending and not sub.closed:
                uri = next(iter(sub.pending))
                del sub.pending[uri]
                try:
                    with anyio.fail_after(self.limits.write_seconds):
                        await sub.session.send_resource_updated(uri)
                except Exception as exc:  # the client is gone or does not read: drop it alone
                    self._drop(sub, type(exc).__name__)

    def _drop(self, sub: Subscriber, why: str) -> None:
        if sub.closed:
            return
        sub.closed = True
        sub.wake.set()
        self.subscribers.pop(sub.key, None)
        self.dropped += 1
        log.warning("lil mcp: dropped the subscriptions of client %s (%s)", sub.key, why)
        for run_id in list(sub.runs):
            if self._loop is not None:
                task = self._loop.create_task(self._unwatch(run_id))
                self._publishing.add(task)
                task.add_done_callback(self._publishing.discard)
        sub.runs.clear()
