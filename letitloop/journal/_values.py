"""The records the journal contract returns: a run's state for replay (``RunState``,
``StepRecord``), listings and details (``RunInfo``, ``RunDetail``, ``AttemptInfo``,
``EventInfo``), a run's blackboard, the cache, splice proposals, approvals, graph checkpoints and
the outbox's notices.

They are NamedTuples for the type checker and ``collections.namedtuple`` at run time
(``letitloop._named``): ``RunState`` and ``StepRecord`` are on the path of ``from letitloop
import durable, step`` and of every resume, which must not pay for importing typing.
"""

from __future__ import annotations

from _thread import allocate_lock  # threading.Lock, without importing threading

from letitloop._named import named_tuple

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    Encoded = tuple[str, bytes]  # (codec name, bytes), see kernel._codec
else:
    NamedTuple = object  # the class bodies below are made into named tuples at the end
    Encoded = tuple  # (codec name, bytes)

# The records below are NamedTuples rather than dataclasses: they are immutable all the same, and
# a process that only resumes a run should not pay for generating dataclass methods at import.


class StepRecord(NamedTuple):
    """The latest attempt at one position of a run, as replay needs it.

    A NamedTuple, not a dataclass: a resume builds one per journaled step, so it must be cheap.
    The field order is also the order of a step in ``open_run``'s wire form.
    """

    position: int
    attempt: int
    kind: str  # "step" | "marker" | "child" | "approval" | "suspend" | "map"
    name: str
    fingerprint: str
    status: str  # "started" | "completed" | "failed" | "superseded" (rewound: run again)
    codec: str | None = None
    output: bytes | None = None  # None with big=True: fetch with Journal.get_output
    big: bool = False
    error: dict[str, Any] | None = None
    next_position: int | None = None
    resolution: str | None = None  # markers: "done" | "redo" once someone resolved it


class RunState(NamedTuple):
    """What ``open_run`` returns: the run's header and its current steps by position."""

    run_id: str
    workflow: str
    key: str
    epoch: int
    status: str  # "running" | "completed" | "failed" | "suspended"
    attempt: int  # how many times the run has been started or resumed in this epoch
    result: Encoded | None
    error: dict[str, Any] | None
    steps: dict[int, StepRecord]
    cost_micros: int = 0  # spent in this epoch so far
    tokens: int = 0
    budget: tuple[int | None, int | None] | None = None  # journaled (micro-USD, tokens)
    args: Encoded | None = None  # the journaled call's encoded [args, kwargs]
    forked: bool = False  # its first step was copied by a fork (``journal._fork``)


class RunInfo(NamedTuple):
    """One row of a run listing."""

    run_id: str
    workflow: str
    key: str
    status: str  # running | interrupted | completed | failed
    epoch: int
    attempt: int
    created: float
    updated: float
    steps_done: int
    current_step: str | None
    holder: str | None
    parent: str | None
    error: dict[str, Any] | None
    cost_micros: int = 0  # spent by every attempt of the current epoch, in millionths of a USD
    tokens: int = 0
    saved_micros: int = 0  # what cache hits saved
    # seconds the run executed: the sum of its tries (start to its process's last record), not
    # the time since it was created; None when the backend cannot tell
    active_seconds: float | None = None
    budget: tuple[int | None, int | None] | None = None  # journaled (micro-USD, tokens) limits
    # positions the current epoch has reached (every step that started, whatever became of it):
    # the "of" in "2 of 3 steps" on every surface; None from a journal that cannot tell
    steps_total: int | None = None


class AttemptInfo(NamedTuple):
    """One attempt of one step, with an output preview that never runs user code."""

    position: int
    attempt: int
    kind: str
    name: str
    fingerprint: str
    status: str
    started: float | None
    ended: float | None
    codec: str | None
    size: int
    error: dict[str, Any] | None
    next_position: int | None
    resolution: str | None
    resolved_by: str | None
    preview: str | None = None
    cost_micros: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model: str | None = None
    cache: str | None = None  # "hit" | "miss" for steps with cache=True


class RunDetail(NamedTuple):
    run: RunInfo
    attempts: list[AttemptInfo]
    result: Encoded | None
    entry: str | None = None  # "module:qualname" (or "/path/script.py:qualname") to resume by
    args: Encoded | None = None  # the call's encoded [args, kwargs]
    result_shown: str | None = None  # a pickled result's short repr, taken when it was written


class EventInfo(NamedTuple):
    """One journal record as an event: ``seq`` orders all events of a journal."""

    seq: int
    run_id: str
    kind: str
    position: int | None
    attempt: int | None
    name: str | None
    ts: float
    data: dict[str, Any]


class BoardEntry(NamedTuple):
    """One version of one key on a run's blackboard, its value still encoded."""

    key: str
    version: int  # 1 for the key's first write, then one more for each
    codec: str
    output: bytes
    tags: tuple[str, ...]
    pinned: bool  # context assembly never drops a pinned entry
    by: str  # who wrote it: a run's step ("run@epoch.position"), a thread's task, a person
    ts: float


class BoardView(NamedTuple):
    """A run's blackboard as read: its current epoch and the entries asked for, each key's
    versions oldest first, keys in the order of their first write."""

    run_id: str
    epoch: int
    entries: list[BoardEntry]


class CacheEntry(NamedTuple):
    """A step output kept for reuse across runs (``step(..., cache=True)``)."""

    key: str
    fn: str
    created: float
    expires: float | None
    size: int
    cost_micros: int  # what computing it cost: a hit saves that much
    codec: str | None = None  # the output itself, filled in by cache_get
    output: bytes | None = None


class Proposal(NamedTuple):
    """A splice an agent proposed: replace ``target`` in ``path`` with ``code``."""

    id: str
    path: str
    target: str
    code: str
    reason: str
    by: str
    created: float
    base: str  # sha256 of the file when proposed
    old: str  # the target's source when proposed: applying checks it is still the same
    origin: str | None  # the run that proposed it, if any
    state: str  # pending | applied | rejected | conflict
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None  # a comment, or for a conflict the target's current source


class ApprovalInfo(NamedTuple):
    """A request for a person's decision, made by ``approval()`` at one position of a run."""

    id: str
    run_id: str
    epoch: int
    position: int
    name: str
    payload: Any  # what the workflow asked about (JSON data)
    schema: dict[str, Any] | None  # a JSON schema an edited payload must satisfy
    created: float
    deadline: float | None
    on_timeout: str  # approve | reject | suspend
    status: str  # pending | approved | rejected | cancelled (the run was reset)
    decided_by: str | None = None
    decided_at: float | None = None
    comment: str | None = None
    edited: Any = None  # the payload as the approver changed it, or None
    timed_out: bool = False
    attempt: int = 1


class CheckpointWrite(NamedTuple):
    """One pending write of a graph task, its value encoded by the graph's serializer."""

    task_id: str
    idx: int  # position in the task's writes; special channels (errors, interrupts) are < 0
    channel: str
    value: Encoded  # (serializer type, bytes): the journal never decodes it
    task_path: str = ""


class CheckpointRow(NamedTuple):
    """One checkpoint of a graph thread (a LangGraph checkpoint), as the journal keeps it."""

    thread_id: str
    ns: str  # the checkpoint namespace: "" for the root graph, else a subgraph's
    checkpoint_id: str  # sortable: newer checkpoints have greater ids
    parent_id: str | None
    checkpoint: Encoded
    metadata: Encoded
    created: float
    writes: list[CheckpointWrite]  # pending writes in (task_path, task_id, idx) order


class Notice(NamedTuple):
    """One notification of the outbox: an event people act on, and its delivery so far."""

    key: str  # the idempotency key the receiver sees (stable across retries and restarts)
    seq: int  # the journal event that caused it
    event: str  # approval_waiting | effect_in_doubt | dead_letter | budget_stop | run_failed
    run_id: str
    created: float
    state: str  # pending | delivered | failed
    tries: int
    next_at: float | None
    last_error: str | None
    delivered_at: float | None
    body: str  # the JSON body, exactly as signed and sent


if not TYPE_CHECKING:  # the class bodies above, as collections.namedtuple makes them
    # what every workflow uses is made now; the rest when first asked for (each costs ~0.1 ms
    # at import, and a resume needs none of them)
    StepRecord = named_tuple(StepRecord)
    RunState = named_tuple(RunState)
    _BODIES = {
        body.__name__: body
        for body in (
            RunInfo,
            AttemptInfo,
            RunDetail,
            EventInfo,
            BoardEntry,
            BoardView,
            CacheEntry,
            Proposal,
            ApprovalInfo,
            CheckpointWrite,
            CheckpointRow,
            Notice,
        )
    }
    for _name in _BODIES:
        del globals()[_name]
    _making = allocate_lock()

    def __getattr__(name: str) -> Any:
        """A record made on first use (once, even if two threads ask at the same time)."""
        body = _BODIES.get(name)
        if body is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        with _making:
            made = globals().get(name)
            if made is None:
                made = globals()[name] = named_tuple(body)
        return made


RECORDS = (
    "StepRecord",
    "RunState",
    "RunInfo",
    "AttemptInfo",
    "RunDetail",
    "EventInfo",
    "BoardEntry",
    "BoardView",
    "CacheEntry",
    "Proposal",
    "ApprovalInfo",
    "CheckpointWrite",
    "CheckpointRow",
    "Notice",
)
