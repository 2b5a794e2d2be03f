"""The Journal contract: what every journal backend provides, independent of how it stores data.

The durable runtime, the operate layer and every front end speak only these Protocols. The
contract is split into roles (``RunJournal`` to execute runs, ``ReadJournal`` to read them,
``DecisionJournal`` for a person's decisions, and proposals, cache, checkpoints, limits, the
outbox and administration); ``Journal`` is all of them. Three backends implement every role:
``OwnerJournal`` (a client of the per-file DuckDB owner process), ``PostgresJournal`` and
``MemoryJournal`` (in-process, for fast tests), and pass one contract suite; nothing here may
assume a backend. A caller that needs one role asks for it (the LangGraph saver takes a
``CheckpointJournal``), so what a piece of code may do to a journal reads from its signature.

Leases: ``open_run(..., lease=True)`` makes the calling journal object the only writer of that
run until ``release_run`` or until the process dies (the owner notices the closed socket).
"""

from __future__ import annotations

from letitloop._named import named_tuple

# typing is for the type checker only: importing it would cost every process that imports the
# runtime a few ms (the path of ``from letitloop import durable, step`` and of every resume).
# At run time the records below are made by collections.namedtuple (``_named``), and the roles
# are plain classes: they are never instantiated or checked with isinstance.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NamedTuple, Protocol

    from letitloop.journal._queues import QueueInfo, QueueItem, QueueSpec, WorkerInfo
    from letitloop.journal._records import Record

    Encoded = tuple[str, bytes]  # (codec name, bytes), see kernel._codec
else:
    NamedTuple = Protocol = object
    Encoded = tuple  # (codec name, bytes)


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


class Subscription(Protocol):
    def close(self) -> None: ...


class _Located(Protocol):
    """Every role knows which journal it is: its id (keys, notices) and where it is."""

    journal_id: str
    location: str


class RunJournal(_Located, Protocol):
    """What the durable runtime needs to execute a run: lease it, replay it, write it."""

    def open_run(
        self,
        *,
        run_id: str,
        workflow: str,
        key: str,
        args: Encoded | None = None,
        entry: str | None = None,
        parent: str | None = None,
        lease: bool = True,
        lock_timeout: float = 0.0,
        reopen: bool = False,
        steps: bool = True,
    ) -> RunState:
        """Create or load a run; with lease, start an attempt unless it already completed (or,
        with ``reopen``, even then: its steps replay and it completes again). Without lease and
        with ``steps=False`` the state's steps may be left empty: a look at the run's status and
        arguments that need not carry a long run's steps."""
        ...

    def release_run(self, run_id: str) -> None: ...

    def append(self, records: Sequence[Record], *, sync: bool = True) -> None:
        """Write records; with sync, return only once they are durable."""
        ...

    def get_output(self, run_id: str, epoch: int, position: int, attempt: int) -> Encoded: ...

    def results(self, run_ids: Sequence[str]) -> dict[str, Encoded]:
        """The journaled results of those of ``run_ids`` that completed, in one read (a map
        that re-attaches finds its finished items without a call per item)."""
        ...


class ReadJournal(_Located, Protocol):
    """What every surface reads: runs, their steps and attempts, and the event stream."""

    def list_runs(
        self, *, status: str | None = None, workflow: str | None = None, limit: int = 100
    ) -> list[RunInfo]: ...

    def get_run(self, run_id: str) -> RunDetail: ...

    def find_run(self, text: str) -> str:
        """Resolve a run id, or an unambiguous prefix or suffix of one, to the full id."""
        ...

    def events(
        self, *, after: int = 0, run_id: str | None = None, limit: int = 1000
    ) -> list[EventInfo]: ...

    def subscribe(
        self, callback: Callable[[list[EventInfo]], None], *, run_id: str | None = None
    ) -> Subscription:
        """Call ``callback`` with new events as they are journaled (pushed, never polled). An
        empty list means events may have been missed (the owner restarted): re-read state. An
        ``interrupted`` event (not a journal record) says the process executing a run is gone."""
        ...


class DecisionJournal(_Located, Protocol):
    """A person's decisions and interventions on a run (first decision wins)."""

    def resolve_marker(
        self, run_id: str, marker: str | int, resolution: str, by: str, comment: str | None = None
    ) -> None:
        """Decide a marker in doubt (``done``/``redo``/``rearm``), with the person's comment."""
        ...

    def set_budget(
        self, run_id: str, by: str, *, usd_micros: int | None = None, tokens: int | None = None
    ) -> None:
        """Set or raise a run's budget; a suspended run continues when it is called again."""
        ...

    def approvals(
        self, *, status: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> list[ApprovalInfo]:
        """Approval requests, newest first (``status="pending"`` for an inbox)."""
        ...

    def decide_approval(
        self,
        approval_id: str,
        *,
        approved: bool,
        by: str,
        comment: str | None = None,
        payload: Any = None,
        timed_out_at: float | None = None,
    ) -> ApprovalInfo:
        """Approve or reject (``approval_id`` may be a unique prefix); the first decision wins and a
        later one raises ``ApprovalDecidedError``. ``payload`` replaces the request's payload
        (checked against its schema); ``timed_out_at`` marks the decision of ``on_timeout``."""
        ...

    def cancel_run(self, run_id: str, by: str, reason: str | None = None) -> None:
        """Stop a run for good: a process executing it stops at its next journal write, and
        calling it again raises ``RunCancelledError`` until someone resets it."""
        ...

    def note_restart(self, run_id: str, by: str, reason: str) -> None:
        """Journal that a supervisor restarted the process that was executing this run."""
        ...

    def rearm_step(self, run_id: str, by: str, step: str | int | None = None) -> None:
        """Give a dead-lettered step (the run's only one, or by name or position) new attempts."""
        ...

    def reset_run(self, run_id: str, by: str, comment: str | None = None) -> None: ...


class ProposalJournal(_Located, Protocol):
    """Splice proposals: an agent proposes, a person applies or rejects."""

    def propose(self, proposal: Proposal) -> None:
        """Record a pending splice proposal (made by the splicer's ``propose_splice``)."""
        ...

    def proposals(self, state: str | None = None) -> list[Proposal]: ...

    def decide(self, proposal_id: str, state: str, by: str, note: str | None = None) -> None:
        """Record that a proposal was applied, rejected or found in conflict."""
        ...


class BoardJournal(_Located, Protocol):
    """A run's blackboard: versioned, tagged entries anyone may write (``letitloop.memory``)."""

    def board(self, run_id: str, *, key: str | None = None, history: bool = False) -> BoardView:
        """The blackboard of run ``run_id`` in its current epoch: each key's newest version, or
        with ``history`` every version (``key``: that key's only)."""
        ...

    def board_put(
        self,
        run_id: str,
        epoch: int,
        key: str,
        value: Encoded,
        *,
        version: int,
        tags: Sequence[str] = (),
        pinned: bool = False,
        by: str,
    ) -> None:
        """Write ``version`` of ``key``: it must be the key's next version (compare-and-swap),
        else ``BoardConflictError`` says which version the journal holds. Durable on return; a
        resend of the same write (same version, same ``by``) is a no-op."""
        ...


class CacheJournal(_Located, Protocol):
    """Step outputs kept for reuse across runs (``step(..., cache=True)``)."""

    def cache_get(self, key: str) -> CacheEntry | None: ...

    def cache_put(
        self, key: str, fn: str, encoded: Encoded, cost_micros: int, expires: float | None
    ) -> None:
        """Keep an output for reuse; not waited for (a lost entry only costs a recomputation)."""
        ...

    def cache_list(self, limit: int = 100) -> list[CacheEntry]: ...

    def cache_clear(self, fn: str | None = None) -> None: ...


class CheckpointJournal(_Located, Protocol):
    """Graph checkpoints: a thread is the run ``langgraph:<thread_id>``."""

    def put_checkpoint(
        self, row: CheckpointRow, *, workflow: str, status: str, meta: dict[str, Any]
    ) -> None:
        """Save a checkpoint durably. ``meta`` is its metadata as JSON data (to filter by);
        ``status`` (running | completed | suspended | failed) is what the thread's run shows."""
        ...

    def put_checkpoint_writes(
        self,
        thread_id: str,
        ns: str,
        checkpoint_id: str,
        task_id: str,
        task_path: str,
        writes: Sequence[CheckpointWrite],
        *,
        status: str | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        """Save a task's writes durably; a write already saved at the same (task, idx) stays,
        except for special channels (negative idx), which are replaced."""
        ...

    def checkpoints(
        self,
        *,
        thread_id: str | None = None,
        ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[CheckpointRow]:
        """Checkpoints newest first with their pending writes; ``filter`` matches metadata
        keys by equality, ``before`` keeps ids lower than it."""
        ...

    def delete_checkpoints(
        self,
        *,
        thread_ids: Sequence[str] | None = None,
        run_ids: Sequence[str] | None = None,
        keep_latest: bool = False,
    ) -> None:
        """Delete the threads' checkpoints (with ``keep_latest``, all but the newest of each
        namespace), or those whose metadata ``run_id`` is one of ``run_ids``."""
        ...

    def copy_checkpoints(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to another."""
        ...


class LimitJournal(_Located, Protocol):
    """Shared rate limits (``journal._limits``): capacity taken by every process."""

    def take_capacity(self, name: str, rpm: int | None, tpm: int | None, tokens: int = 0) -> float:
        """Take one call's request and ``tokens`` from the shared limit ``name``: 0.0 when
        taken, else the seconds to sleep before asking again (nothing is held meanwhile)."""
        ...

    def adjust_capacity(self, name: str, tokens: int) -> None:
        """Count ``tokens`` more (negative: fewer) than a call took; not waited for."""
        ...

    def block_capacity(self, name: str, seconds: float) -> None:
        """A provider answered 429 with ``Retry-After: seconds``: no call of ``name`` before."""
        ...

    def capacity(self) -> list[dict[str, Any]]:
        """Every limit's bucket now: name, rpm, tpm, requests and tokens left, blocked_for."""
        ...


class OutboxJournal(_Located, Protocol):
    """The notification outbox (``journal._outbox``)."""

    def notifications(self, *, state: str | None = None, limit: int = 100) -> list[Notice]:
        """The outbox, newest first (``state``: pending | delivered | failed)."""
        ...

    def retry_notification(self, key: str) -> None:
        """Deliver a failed notification again (``lil notify retry``)."""
        ...


class QueueJournal(_Located, Protocol):
    """Queued runs and workers (``journal._queues``): enqueue, claim, heartbeat, finish."""

    def enqueue(self, spec: QueueSpec, item: QueueItem) -> bool:
        """Queue a run durably (declaring the queue); False if that run was queued before."""
        ...

    def claim(self, worker: WorkerInfo, n: int) -> list[QueueItem]:
        """Heartbeat ``worker`` and claim up to ``n`` runs for it (queued, or held by a worker
        that lapsed), within each queue's pause and limits."""
        ...

    def beat_worker(self, worker: WorkerInfo) -> list[str]:
        """Heartbeat ``worker``; the runs of ``worker.runs`` it no longer holds (taken over)."""
        ...

    def finish_item(self, worker: str, run_id: str, outcome: str) -> bool:
        """Finish a claimed run with its outcome, or ``released``: back to the queue."""
        ...

    def leave_worker(self, worker: str) -> None: ...  # what it holds goes back to the queue

    def pause_queue(self, name: str, paused: bool) -> None: ...
    def queues(self) -> list[QueueInfo]: ...

    def queue_items(
        self, *, queue: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[QueueItem]: ...

    def queue_item(self, run_id: str) -> QueueItem | None: ...
    def workers(self) -> list[WorkerInfo]: ...

    def wait_for_work(self, timeout: float) -> None:
        """Return when a run may have been queued (or at ``timeout``): idle workers sleep here."""
        ...


class AdminJournal(_Located, Protocol):
    """Keeping the journal: copies, garbage collection, closing."""

    def import_records(self, records: Sequence[Record]) -> None:
        """Write records copied from another journal (``lil journal copy``), durably, in order.

        They are checked by the state machine like an append (natural keys make a resend a
        no-op), but as history: no lease is needed, and a run some process holds is refused."""
        ...

    def gc(self, *, older_than: float, statuses: Sequence[str] = ("completed",)) -> int:
        """Delete finished runs older than ``older_than`` (graph threads are left alone: they
        go with ``delete_checkpoints``)."""
        ...

    def close(self) -> None: ...


class Journal(
    RunJournal,
    ReadJournal,
    DecisionJournal,
    ProposalJournal,
    BoardJournal,
    CacheJournal,
    CheckpointJournal,
    LimitJournal,
    OutboxJournal,
    QueueJournal,
    AdminJournal,
    Protocol,
):
    """The whole backend contract: every role. A backend implements all of them (and passes the
    one contract suite); a caller that needs one role asks for it. Every method is safe to call
    from any thread."""


if not TYPE_CHECKING:  # the class bodies above, as collections.namedtuple makes them
    StepRecord = named_tuple(StepRecord)
    RunState = named_tuple(RunState)
    RunInfo = named_tuple(RunInfo)
    AttemptInfo = named_tuple(AttemptInfo)
    RunDetail = named_tuple(RunDetail)
    EventInfo = named_tuple(EventInfo)
    CacheEntry = named_tuple(CacheEntry)
    Proposal = named_tuple(Proposal)
    ApprovalInfo = named_tuple(ApprovalInfo)
    CheckpointWrite = named_tuple(CheckpointWrite)
    CheckpointRow = named_tuple(CheckpointRow)
    Notice = named_tuple(Notice)
