"""The Journal contract: what every journal backend provides, independent of how it stores data.

The durable runtime, the operate layer and every front end speak only these Protocols, and the
records they return (``journal._values``). The
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

# typing is for the type checker only: importing it would cost every process that imports the
# runtime a few ms (the path of ``from letitloop import durable, step`` and of every resume).
# At run time the roles are plain classes: they are never instantiated or checked with
# isinstance.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Protocol

    from letitloop.journal._queues import QueueInfo, QueueItem, QueueSpec, WorkerInfo
    from letitloop.journal._records import Record
    from letitloop.journal._values import (  # the records the roles return, re-exported
        ApprovalInfo as ApprovalInfo,
        AttemptInfo as AttemptInfo,
        BoardEntry as BoardEntry,
        BoardView as BoardView,
        CacheEntry as CacheEntry,
        CheckpointRow as CheckpointRow,
        CheckpointWrite as CheckpointWrite,
        Encoded as Encoded,
        EventInfo as EventInfo,
        Notice as Notice,
        Proposal as Proposal,
        RunDetail as RunDetail,
        RunInfo as RunInfo,
        RunState as RunState,
        StepRecord as StepRecord,
    )
else:
    Protocol = object
    from letitloop.journal._values import Encoded as Encoded


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
        durable: bool = True,
    ) -> RunState:
        """Create or load a run; with lease, start an attempt unless it already completed (or,
        with ``reopen``, even then: its steps replay and it completes again). Without lease and
        with ``steps=False`` the state's steps may be left empty: a look at the run's status and
        arguments that need not carry a long run's steps. With ``durable=False`` the attempt's
        start may be made durable with the run's next acknowledged write instead of before this
        returns (a ``step.map`` item, whose step follows at once: one fsync for both); a backend
        may make it durable at once."""
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
        """Heartbeat ``worker`` and claim up to ``n`` runs for it (queued, held by a worker
        that lapsed, or held by a process that died), within each queue's pause and limits."""
        ...

    def beat_worker(self, worker: WorkerInfo) -> list[str]:
        """Heartbeat ``worker``; the runs of ``worker.runs`` it no longer holds (taken over)."""
        ...

    def finish_item(self, worker: str, run_id: str, outcome: str) -> bool:
        """Finish a claimed run with its outcome, or ``released``: back to the queue."""
        ...

    def leave_worker(self, worker: str) -> None: ...  # what it holds goes back to the queue

    def hold(self, spec: QueueSpec, item: QueueItem, *, declare: bool = False) -> None:
        """A recoverable run this journal's process executes (it holds the run's lease): held
        by this journal's session until ``unhold``; if the process dies first, the run goes
        back to the queue for a worker. ``declare``: the spec's limits replace the queue's
        (else a missing queue is created with them)."""
        ...

    def unhold(self, run_id: str, outcome: str) -> None:
        """This process is done with a run it held: its item is finished with ``outcome``."""
        ...

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


def __getattr__(name: str) -> Any:
    """The records the roles return, re-exported (``journal._values``; made when first used)."""
    from letitloop.journal import _values

    if name in _values.RECORDS:
        return getattr(_values, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
