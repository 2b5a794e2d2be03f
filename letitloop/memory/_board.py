"""The blackboard: a run's shared, versioned memory, every write and read journaled.

``blackboard()`` inside a durable run is the board of the run at the top of its call tree, so
child runs (``step.map`` items, nested ``@durable`` calls, agent teams' tool calls) share it,
wherever they run. Each write is the key's next version, counted by the journal's state machine
(compare-and-swap: ``put(..., expect=version)`` fails with ``BoardConflictError`` if someone
wrote since). Inside a run every call is a step of the calling run: a replay returns what the
call returned the first time without touching the board, so a resumed run sees exactly what it
saw, even while other processes write. Outside a run (a script, a test, a tool) calls go to the
journal directly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from letitloop.errors import BoardConflictError, ConfigError, NotInDurableContextError
from letitloop.journal import check_text
from letitloop.kernel import codec_for, current_run, current_step, resolve_journal, step

if TYPE_CHECKING:
    from letitloop.journal import BoardEntry, Journal
    from letitloop.kernel import Codec, RunContext

BLIND_TRIES = 20  # a write without expect= retries this often when others keep writing first


@dataclass(frozen=True)
class Entry:
    """One version of one key: its value, tags, whether it is pinned, who wrote it and when."""

    key: str
    version: int
    value: Any
    tags: tuple[str, ...] = ()
    pinned: bool = False
    by: str = ""
    ts: float = 0.0

    def data(self) -> dict[str, Any]:
        """As a journaled step keeps it (plain data)."""
        return {
            "key": self.key,
            "version": self.version,
            "value": self.value,
            "tags": list(self.tags),
            "pinned": self.pinned,
            "by": self.by,
            "ts": self.ts,
        }

    @classmethod
    def of(cls, data: dict[str, Any]) -> Entry:
        return cls(
            data["key"],
            data["version"],
            data["value"],
            tuple(data["tags"]),
            data["pinned"],
            data["by"],
            data["ts"],
        )


class Blackboard:
    """The blackboard of run ``run_id`` (see the module docstring)."""

    def __init__(
        self, run_id: str, journal: Journal, codec: Codec, writer: str | None = None
    ) -> None:
        self.run_id = run_id
        self.journal = journal
        self.codec = codec
        # outside a run: who writes, stable across a re-execution (a graph's task), so the
        # n-th put of this object is written once however often the code runs again
        self.writer = writer
        self._puts = 0

    def __repr__(self) -> str:
        return f"<blackboard of run {self.run_id}>"

    # -- the API ------------------------------------------------------------------------------

    def put(
        self,
        key: str,
        value: Any,
        *,
        tags: Iterable[str] | None = None,
        pinned: bool | None = None,
        expect: int | None = None,
    ) -> Entry:
        """Write ``value`` as the next version of ``key`` and return the entry written.

        ``expect=version`` writes only if the key is still at that version (0: the key is new),
        else raises ``BoardConflictError`` naming the version found: read it again and decide.
        ``pinned=True`` entries are never dropped from assembled context; ``tags`` group
        entries for ``find`` and context sources; left out, both are the key's current ones."""
        _check_key(key)
        listed = None if tags is None else list(tags)
        if expect is not None and (type(expect) is not int or expect < 0):
            raise ConfigError(
                f"expect={expect!r} is not a version",
                fix="pass the version you read (entry.version), or 0 for a key not written yet",
            )
        written: Entry = self._journaled(
            f"board.put {key}", self._put, key, value, listed, pinned, expect
        )
        return written

    def get(self, key: str) -> Entry | None:
        """The newest version of ``key``, or None if it was never written."""
        _check_key(key)
        found = self._journaled(f"board.get {key}", self._read, key, False, None)
        return found[-1] if found else None

    def history(self, key: str) -> list[Entry]:
        """Every version of ``key``, oldest first (a thread's turns, a draft's revisions)."""
        _check_key(key)
        return self._journaled(f"board.history {key}", self._read, key, True, None)  # type: ignore[no-any-return]

    def find(self, tag: str | None = None) -> list[Entry]:
        """The newest version of every key (with ``tag``: of those tagged so), in the order
        they were written."""
        return self._journaled(f"board.find {tag or '*'}", self._read, None, False, tag)  # type: ignore[no-any-return]

    # -- journaled calls ----------------------------------------------------------------------

    def _journaled(self, name: str, fn: Any, *args: Any) -> Any:
        """Inside a run: a step of the calling run (plain data journaled, entries returned)."""
        if current_run.get() is None:
            return fn(None, *args)
        out = step(name, _step_body, self.run_id, fn.__name__, list(args))
        return [Entry.of(d) for d in out] if isinstance(out, list) else Entry.of(out)

    def _put(
        self,
        writer: str | None,
        key: str,
        value: Any,
        tags: list[str] | None,
        pinned: bool | None,
        expect: int | None,
    ) -> Entry:
        if writer is None and self.writer is not None:
            self._puts += 1
            writer = f"{self.writer}#{self._puts}"
            found = self._written_by(key, writer)
            if found is not None:
                return found
        by = writer or _outside_writer()
        if current_run.get() is not None and current_step().attempt > 1:
            # an earlier attempt of this very step may have written before its process died
            found = self._written_by(key, by)
            if found is not None:
                return found
        encoded = self.codec.encode(value, what=f"blackboard value {key!r}", run_id=self.run_id)
        for _ in range(BLIND_TRIES):
            view = self.journal.board(self.run_id, key=key)
            last = view.entries[-1] if view.entries else None
            head = last.version if last is not None else 0
            if expect is not None and head != expect:
                raise _conflict(self.run_id, key, expect, head)
            now_tags = tags if tags is not None else list(last.tags if last else ())
            now_pinned = pinned if pinned is not None else bool(last and last.pinned)
            try:
                self.journal.board_put(
                    self.run_id,
                    view.epoch,
                    key,
                    encoded,
                    version=head + 1,
                    tags=now_tags,
                    pinned=now_pinned,
                    by=by,
                )
            except BoardConflictError:
                if expect is not None:
                    raise
                continue  # someone wrote between the read and the write: the next version
            return Entry(key, head + 1, value, tuple(now_tags), now_pinned, by, time.time())
        raise _conflict(self.run_id, key, head, head + 1)

    def _written_by(self, key: str, by: str) -> Entry | None:
        for entry in self.journal.board(self.run_id, key=key, history=True).entries:
            if entry.by == by:
                return self._entry(entry)
        return None

    def _read(
        self, writer: str | None, key: str | None, history: bool, tag: str | None
    ) -> list[Entry]:
        entries = self.journal.board(self.run_id, key=key, history=history).entries
        return [self._entry(e) for e in entries if tag is None or tag in e.tags]

    def _entry(self, e: BoardEntry) -> Entry:
        value = self.codec.decode(e.codec, e.output, what=f"blackboard value {e.key!r}")
        return Entry(e.key, e.version, value, e.tags, e.pinned, e.by, e.ts)


def _step_body(board_run: str, op: str, args: list[Any]) -> Any:
    """What a board step runs: the operation, as the writer this step is (its position)."""
    ctx = current_run.get()
    assert ctx is not None
    info = current_step()
    writer = f"{ctx.run_id}@{ctx.epoch}.{info.position}"
    board = _board_for(ctx, board_run)
    out = getattr(board, op)(writer, *args)
    return [e.data() for e in out] if isinstance(out, list) else out.data()


def _board_for(ctx: RunContext, run_id: str) -> Blackboard:
    return Blackboard(run_id, ctx.journal, ctx.codec)


def _outside_writer() -> str:
    from letitloop.journal import who

    return f"{who()}/{os.getpid()}.{os.urandom(3).hex()}"


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise ConfigError(
            f"a blackboard key must be a non-empty string, got {key!r}",
            fix='name it, e.g. board.put("plan", ...)',
        )
    check_text(key, "a blackboard key", ConfigError)


def _conflict(run_id: str, key: str, expected: int, current: int) -> BoardConflictError:
    return BoardConflictError(
        f"blackboard of run {run_id}: {key!r} is at version {current}, but this write expected "
        f"version {expected}",
        fix=f"read {key!r} again (board.get), decide what to write from its version {current}, "
        f"and put it with expect={current}; or put without expect= to write the next version",
        run_id=run_id,
        key=key,
        expected=expected,
        current=current,
    )


def blackboard(
    run_id: str | None = None, *, journal: Any = None, writer: str | None = None
) -> Blackboard:
    """The blackboard of the durable run being executed (the top run of its call tree, so
    child runs share it), or of run ``run_id`` (from anywhere: a script, a test, a tool).

    Inside a durable run every call on it is a journaled step: replayed, never repeated.
    Outside one, ``writer=`` names the code writing, stable when it runs again (a graph node's
    task): its n-th ``put`` is then written once, however often the code re-executes."""
    ctx = current_run.get()
    if run_id is None:
        if ctx is None:
            raise NotInDurableContextError(
                "blackboard() was called outside a durable function",
                fix="call it inside a @durable function (or a %%durable cell), or name the "
                'run whose board you want: blackboard("workflow:key")',
            )
        return Blackboard(ctx.root, ctx.journal, ctx.codec)
    if journal is None and ctx is not None:
        return Blackboard(run_id, ctx.journal, ctx.codec)
    found = resolve_journal(journal)
    return Blackboard(found.find_run(run_id), found, codec_for(found), writer)


def entries_of(entries: Sequence[Entry], tag: str) -> list[Entry]:
    """The entries tagged ``tag``."""
    return [e for e in entries if tag in e.tags]
