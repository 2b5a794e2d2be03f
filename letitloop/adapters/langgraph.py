"""LangGraph checkpointers on the letitloop journal: graph threads become journaled runs.

    from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
    app = workflow.compile(checkpointer=LetItLoopCheckpointSaver())

Checkpoints and task writes go through the journal contract (the owner process, its group
commit and push events), encoded by LangGraph's own serializer (``serde``, JsonPlus by default:
never a blanket pickle). The journal is data, never code: every encoded value is stored with an
HMAC under the journal's key (the key of authenticated outputs, kept outside the journal) and
is verified before it reaches ``serde.loads_typed``, so a value someone changed or wrote into
the journal is refused before anything in it is imported. What passes was encoded by this saver
from the graph's own objects, and LangGraph's serializer rebuilds it exactly as it does for
InMemorySaver and SqliteSaver (its default, or strict under ``LANGGRAPH_STRICT_MSGPACK`` with
the types the graph's schemas name): a user's state comes back as the objects they put in.
A thread is the run ``langgraph:<thread_id>`` of workflow ``langgraph:<graph>``, so
``lil runs``, the TUI and the notebook widgets list it.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from types import TracebackType
from typing import Any

from letitloop.errors import ConfigError, TamperedDataError
from letitloop.journal import (
    CheckpointRow,
    CheckpointWrite,
    Journal,
    RecordWrites,
    checkpoint_record,
    checkpoint_writes_record,
)

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.serde.types import ERROR, INTERRUPT, RESUME
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        f"letitloop.adapters.langgraph needs LangGraph, which is not installed ({exc})",
        fix="pip install 'letitloop[langgraph]'",
    ) from exc

__all__ = [
    "AsyncLetItLoopCheckpointSaver",
    "LetItLoopCheckpointSaver",
    "board_for",
    "thread_status",
]
PAGE = 64  # checkpoints per journal call when listing one thread
# how long a task's plain writes wait for the next checkpoint to carry them to the journal (one
# round trip and one fsync per node instead of two); LangGraph never waits for them before that
WRITES_WAIT = 0.002
_MAC = "lil-hmac1:"  # a stored value's type: this prefix, then serde's type; 32 MAC bytes lead


class LetItLoopCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer whose threads live in a letitloop journal.

    ``journal`` is a journal object, a path, or None for the journal found as usual (``LIL_JOURNAL``
    or ``.letitloop/`` upwards). ``graph`` names the workflow threads are listed under. Every
    method is synchronous and thread-safe; the ``a*`` methods run them in a worker thread, so one
    saver serves ``invoke`` and ``ainvoke`` alike.

    ``serde``: LangGraph's serializer to encode with (``JsonPlusSerializer()`` by default, which
    follows ``LANGGRAPH_STRICT_MSGPACK`` and the allowlists LangGraph derives from a graph's
    schemas, as it does for its own savers). ``allowed_modules``: a strict default serializer
    instead, rebuilding LangGraph's safe types and the ``(module, class)`` pairs named here,
    e.g. ``[("myapp.state", "Order")]`` (LangGraph's ``allowed_msgpack_modules``); others come
    back as plain data. Either way a value is decoded only once its HMAC verifies.
    """

    def __init__(
        self,
        journal: Journal | str | os.PathLike[str] | None = None,
        *,
        graph: str = "graph",
        serde: SerializerProtocol | None = None,
        allowed_modules: Sequence[tuple[str, ...]] | None = None,
    ) -> None:
        if serde is not None and allowed_modules:
            raise ConfigError(
                "LetItLoopCheckpointSaver got both serde= and allowed_modules=; allowed_modules "
                "configures the default serializer only",
                fix="pass allowed_msgpack_modules= to your serializer instead, e.g. "
                "JsonPlusSerializer(allowed_msgpack_modules=[...])",
            )
        if serde is None and allowed_modules:  # strict: LangGraph's safe types and these
            serde = JsonPlusSerializer(allowed_msgpack_modules=[tuple(m) for m in allowed_modules])
        elif serde is None:  # LangGraph's own default: what its savers rebuild, ours rebuilds
            serde = JsonPlusSerializer()
        super().__init__(serde=serde)
        self._path: str | os.PathLike[str] | None = None
        self._journal: Journal | None = None
        if journal is None or isinstance(journal, (str, os.PathLike)):
            self._path = journal  # opened on first use
        else:
            self._journal = journal
        self.graph = graph
        self._batches = _Batches(self)

    @property
    def journal(self) -> Journal:
        """The journal (a DuckDB file's owner, or PostgreSQL), opened on first use."""
        if self._journal is None:
            from letitloop.journal import open_journal

            self._journal = open_journal(self._path)
        return self._journal

    def __enter__(self) -> LetItLoopCheckpointSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> LetItLoopCheckpointSaver:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    # -- reads --------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        c = config["configurable"]
        rows = self.journal.checkpoints(
            thread_id=str(c["thread_id"]),
            ns=c.get("checkpoint_ns", ""),
            checkpoint_id=get_checkpoint_id(config),
            limit=1,
        )
        return self._tuple(rows[0]) if rows else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        query: dict[str, Any] | None = _list_query(config, filter, before, limit)
        while query is not None:
            items, query = self._page(query)
            yield from items

    def _page(
        self, query: dict[str, Any]
    ) -> tuple[Sequence[CheckpointTuple], dict[str, Any] | None]:
        """One page of a listing, and the query for the next page (None after the last).

        A listing of one thread and namespace is read ``PAGE`` checkpoints at a time (ids are
        unique there, so the last id is the cursor); other listings come in one answer.
        """
        limit = query["limit"]
        pageable = query["thread_id"] is not None and query["ns"] is not None
        size = (PAGE if limit is None else min(limit, PAGE)) if pageable else limit
        rows = self.journal.checkpoints(**(query | {"limit": size}))
        following = None
        if pageable and rows and len(rows) == size and (limit is None or limit > size):
            following = query | {
                "before": rows[-1].checkpoint_id,
                "limit": None if limit is None else limit - len(rows),
            }
        return [self._tuple(r) for r in rows], following

    def _tuple(self, row: CheckpointRow) -> CheckpointTuple:
        def conf(checkpoint_id: str) -> RunnableConfig:
            return {
                "configurable": {
                    "thread_id": row.thread_id,
                    "checkpoint_ns": row.ns,
                    "checkpoint_id": checkpoint_id,
                }
            }

        def loads(typed: tuple[str, bytes]) -> Any:
            return self.serde.loads_typed(self._verified(row.thread_id, typed))

        return CheckpointTuple(
            config=conf(row.checkpoint_id),
            checkpoint=loads(row.checkpoint),
            metadata=loads(row.metadata),
            parent_config=conf(row.parent_id) if row.parent_id else None,
            pending_writes=[(w.task_id, w.channel, loads(w.value)) for w in row.writes],
        )

    # -- authentication -----------------------------------------------------------------------

    def _mac(self, thread_id: str, typ: str, data: bytes) -> bytes:
        from letitloop.kernel import codec_for

        # not bound to the thread: copy_thread() copies checkpoints as they are
        message = b"\0".join((b"letitloop-langgraph/1", typ.encode(), data))
        mac = codec_for(self.journal).mac(message)
        assert mac is not None  # a journal's codec always has its key
        return mac

    def _dumps(self, thread_id: str, value: Any) -> tuple[str, bytes]:
        """serde's encoding of ``value``, authenticated for this thread."""
        typ, data = self.serde.dumps_typed(value)
        return _MAC + typ, self._mac(thread_id, typ, data) + data

    def _verified(self, thread_id: str, typed: tuple[str, bytes]) -> tuple[str, bytes]:
        """serde's (type, bytes) of a stored value, only if its MAC verifies."""
        import hmac

        stored_type, blob = typed
        typ, mac, data = stored_type[len(_MAC) :], blob[:32], blob[32:]
        ok = stored_type.startswith(_MAC) and len(blob) >= 32
        if not (ok and hmac.compare_digest(mac, self._mac(thread_id, typ, data))):
            raise TamperedDataError(
                f"a checkpoint of LangGraph thread {thread_id!r} failed authentication: it was "
                "changed after it was written, written by another letitloop version, or under "
                "another key; it was not loaded",
                fix="do not trust this journal; if it is yours, use the key it was written with "
                "(or delete the thread with delete_thread() and run the graph again)",
            )
        return typ, data

    # -- writes -------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        c = config["configurable"]
        thread_id, ns = str(c["thread_id"]), c.get("checkpoint_ns", "")
        meta = get_checkpoint_metadata(config, metadata)
        meta.pop("writes", None)  # type: ignore[typeddict-item]
        row = CheckpointRow(
            thread_id,
            ns,
            checkpoint["id"],
            c.get("checkpoint_id"),
            self._dumps(thread_id, checkpoint),
            self._dumps(thread_id, meta),
            time.time(),
            [],
        )
        wf, status = f"langgraph:{self.graph}", thread_status(checkpoint)
        if isinstance(self.journal, RecordWrites):  # with the writes waiting, one round trip
            self._batches.send([checkpoint_record(row, wf, status, dict(meta))], 0.0)
        else:
            self.journal.put_checkpoint(row, workflow=wf, status=status, meta=dict(meta))
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": row.checkpoint_id,
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        c = config["configurable"]
        thread_id = str(c["thread_id"])
        encoded = [
            CheckpointWrite(
                task_id, WRITES_IDX_MAP.get(ch, i), ch, self._dumps(thread_id, v), task_path
            )
            for i, (ch, v) in enumerate(writes)
        ]
        status, error = None, None
        for ch, value in writes:
            if ch == INTERRUPT:
                status = "suspended"
            elif ch == ERROR:
                status = "failed"
                error = {"type": _type_name(value), "message": str(value)[:2000]}
            elif ch == RESUME and status is None:
                status = "running"
        where = (thread_id, c.get("checkpoint_ns", ""), c["checkpoint_id"], task_id, task_path)
        if isinstance(self.journal, RecordWrites):
            rec = checkpoint_writes_record(*where, encoded, status, error)
            # errors, interrupts, resumes and other special channels go at once
            special = any(ch in WRITES_IDX_MAP for ch, _ in writes)
            self._batches.send([rec], 0.0 if special else WRITES_WAIT)
        else:
            self.journal.put_checkpoint_writes(*where, encoded, status=status, error=error)

    def delete_thread(self, thread_id: str) -> None:
        self.journal.delete_checkpoints(thread_ids=[str(thread_id)])

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        if run_ids:
            self.journal.delete_checkpoints(run_ids=[str(r) for r in run_ids])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.journal.copy_checkpoints(str(source_thread_id), str(target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in ("keep_latest", "delete"):
            raise ConfigError(
                f"unknown prune strategy {strategy!r}", fix='use "keep_latest" or "delete"'
            )
        if thread_ids:
            self.journal.delete_checkpoints(
                thread_ids=[str(t) for t in thread_ids], keep_latest=strategy == "keep_latest"
            )

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions as zero-padded strings, sortable as text (as LangGraph's own savers do)."""
        if current is None:
            n = 0
        elif isinstance(current, int):
            n = current
        else:
            n = int(current.split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    # -- async: the same operations in a worker thread, never blocking the event loop ---------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        query: dict[str, Any] | None = _list_query(config, filter, before, limit)
        while query is not None:  # each page is read and decoded in a worker thread
            items, query = await asyncio.to_thread(self._page, query)
            for item in items:
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


class _Batches:
    """Client-side group commit of a saver's checkpoint records: every caller returns once its
    records are durable, and callers that overlap share one journal append.

    A caller with ``wait`` > 0 (a task's plain writes) first gives another caller up to that
    long (counted from when no append is in flight) to carry its records; LangGraph saves the
    step's checkpoint right after its tasks' writes, so a node costs one append (one round
    trip, one fsync) instead of two. At most one append is in flight; whoever finds none in
    flight sends everything queued.
    """

    def __init__(self, saver: LetItLoopCheckpointSaver) -> None:
        self.saver = saver
        self.cond = threading.Condition()
        self.queued: list[dict[str, Any]] = []
        self.filling = 0  # the number of the batch records join now
        self.done = -1  # every batch up to this one is answered
        self.sending = False
        self.idle_since = 0.0  # when the last append was answered
        self.failed: dict[int, BaseException] = {}  # batch -> what its append raised

    def send(self, records: list[dict[str, Any]], wait: float) -> None:
        with self.cond:
            self.queued.extend(records)
            mine = self.filling
            start = time.monotonic()
            while wait > 0 and self.filling == mine:  # let a checkpoint that follows carry them
                if self.sending:  # nothing can go before that append is answered anyway
                    self.cond.wait()
                    continue
                left = max(start, self.idle_since) + wait - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            while self.done < mine:
                if self.sending or self.filling > mine:
                    self.cond.wait()
                    continue
                batch, self.queued = self.queued, []
                self.filling, self.sending = mine + 1, True
                self.cond.notify_all()  # writes waiting for a carrier now wait for the answer
                self.cond.release()
                error: BaseException | None = None
                try:
                    self.saver.journal.append(batch)
                except BaseException as exc:  # every caller of the batch is told
                    error = exc
                finally:
                    self.cond.acquire()
                if error is not None:
                    self.failed[mine] = error
                    for old in [b for b in self.failed if b < mine - 64]:
                        del self.failed[old]
                self.done, self.sending = mine, False
                self.idle_since = time.monotonic()
                self.cond.notify_all()
            error = self.failed.get(mine)
        if error is not None:
            raise error


class AsyncLetItLoopCheckpointSaver(LetItLoopCheckpointSaver):
    """The saver for ``ainvoke``/``astream``, named like LangGraph's ``Async*Saver`` classes.

    ``LetItLoopCheckpointSaver`` already serves both worlds (its async methods hand journal
    calls to a worker thread); this subclass exists so code reads as it does with other savers.
    """


def thread_status(checkpoint: Checkpoint) -> str:
    """``running`` if the checkpoint leaves nodes to run, else ``completed``.

    Nodes run next when the step updated a channel that triggers them (``branch:to:<node>``,
    ``__start__`` for the input, ``__pregel_tasks`` for Send packets). Checkpoints without
    ``updated_channels`` (older formats) compare versions with what each node has seen.
    """
    updated = checkpoint.get("updated_channels")
    if updated is not None:
        return "running" if any(_triggers(ch) for ch in updated) else "completed"
    seen = checkpoint.get("versions_seen") or {}
    for channel, version in (checkpoint.get("channel_versions") or {}).items():
        node = _triggers(channel)
        last = seen.get(node, {}).get(channel) if node else version
        if last is None or _newer(version, last):
            return "running"
    return "completed"


def _triggers(channel: str) -> str | None:
    """The node a channel triggers, if it is a trigger channel."""
    if channel.startswith("branch:to:"):
        return channel[len("branch:to:") :]
    return channel if channel in ("__start__", "__pregel_tasks") else None


def _newer(a: object, b: object) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a > b
    return str(a) > str(b)


def _list_query(
    config: RunnableConfig | None,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> dict[str, Any]:
    """``Journal.checkpoints`` arguments for a ``list`` call."""
    c = config["configurable"] if config else {}
    return {
        "thread_id": str(c["thread_id"]) if c.get("thread_id") is not None else None,
        "ns": c.get("checkpoint_ns"),
        "checkpoint_id": c.get("checkpoint_id"),
        "before": get_checkpoint_id(before) if before else None,
        "filter": filter or None,
        "limit": limit,
    }


def _type_name(value: object) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def board_for(config: RunnableConfig, journal: Any = None) -> Any:
    """The blackboard (``letitloop.memory``) of a graph thread, for a node that takes
    ``config``: ``board = board_for(config); board.put("draft", text)``.

    It is the board of the run ``langgraph-board:<thread_id>`` (made on first use, in the
    saver's journal, else ``journal`` or the journal found as usual). Its writes are keyed by
    the node's task: a node LangGraph runs again after a crash (the same task) writes each of
    its puts once. Call it once per node execution."""
    from letitloop.errors import JournalError
    from letitloop.journal import open_journal
    from letitloop.memory import blackboard

    conf = config.get("configurable") or {}
    thread = conf.get("thread_id")
    if not thread:
        raise ConfigError(
            "board_for(config) needs the thread's config (configurable.thread_id)",
            fix="take config in the node (def node(state, config)) and pass it on",
        )
    saver = conf.get("__pregel_checkpointer")
    if journal is None and isinstance(saver, LetItLoopCheckpointSaver):
        journal = saver.journal
    journal = (
        open_journal(journal)
        if journal is None or isinstance(journal, (str, os.PathLike))
        else journal
    )
    run_id = f"langgraph-board:{thread}"
    try:
        journal.board(run_id)
    except JournalError:  # the thread's first use of a board: a finished run holds it
        state = journal.open_run(
            run_id=run_id, workflow="langgraph-board", key=str(thread), lock_timeout=10
        )
        if state.status != "completed":
            done = {"k": "done", "run": run_id, "epoch": state.epoch, "codec": "json"}
            journal.append([done | {"out": b"null", "ts": time.time()}])
        journal.release_run(run_id)
    task = conf.get("__pregel_task_id") or conf.get("checkpoint_id") or "graph"
    return blackboard(run_id, journal=journal, writer=f"langgraph:{thread}/{task}")
