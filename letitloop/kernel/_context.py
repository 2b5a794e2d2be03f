"""The state of the run being executed in this thread or task: the journal, the position counter,
and what the journal recorded for each position, plus replay checks shared by steps and markers.
"""

from __future__ import annotations

import time
from _thread import allocate_lock
from collections.abc import Callable
from contextvars import ContextVar
from operator import attrgetter

from letitloop._named import named_tuple
from letitloop.errors import (
    BudgetExceeded,
    CodecError,
    NonDeterminismError,
    NotInDurableContextError,
)
from letitloop.journal import error_dict
from letitloop.kernel._codec import Codec, _json_decode
from letitloop.kernel._policy import StepOptions

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from letitloop.journal import Journal, Record, RunState, StepRecord
else:
    NamedTuple = object  # StepInfo is made by collections.namedtuple below


class StepInfo(NamedTuple):
    """What ``current_step()`` returns inside a step function or a marker block."""

    run_id: str
    name: str
    position: int
    attempt: int
    kind: str
    idempotency_key: str
    feedback: str | None = None  # the validator's critique of the previous attempt, if any


if not TYPE_CHECKING:
    StepInfo = named_tuple(StepInfo)


_STATUS = attrgetter("status")


class RunContext:
    """One executing run. Positions are handed out in call order under a lock."""

    def __init__(
        self,
        journal: Journal,
        codec: Codec,
        state: RunState,
        defaults: StepOptions | None = None,
        budget: tuple[int | None, int | None] | None = None,
        on_change: str = "raise",
    ) -> None:
        self.defaults = defaults or StepOptions()
        self.budget = state.budget or budget  # a budget raised in the journal wins over the code's
        self.spent_micros, self.spent_tokens = state.cost_micros, state.tokens
        self.reserved_micros = 0
        self.inflight = 0  # async attempts running now: the run waits for them before it ends
        self.journal = journal
        self.codec = codec
        self.state = state
        self.run_id = state.run_id
        self.root = state.run_id  # the top of its call tree, whose blackboard it shares
        self.epoch = state.epoch
        self.recorded = state.steps
        self.floor: dict[int, int] = {}  # position -> attempt superseded there (rerun above it)
        if "superseded" in map(_STATUS, state.steps.values()):  # (at C speed: 1000s of steps)
            self.recorded = {p: s for p, s in state.steps.items() if s.status != "superseded"}
            self.floor = {p: s.attempt for p, s in state.steps.items() if s.status == "superseded"}
        self.last_recorded = max(self.recorded, default=-1)
        self.on_change = on_change  # "raise" | "rerun": what replay does when the code changed
        self.observer = observer_var.get()
        self._next = 0
        self._lock = allocate_lock()  # threading.Lock, without importing threading

    def take_position(self) -> int:
        with self._lock:
            pos = self._next
            self._next += 1
            return pos

    def take_step(self, kind: str, name: str, fp: str) -> tuple[int, StepRecord | None]:
        """``take_position`` and ``replayed`` in one call, for the step path of every replay."""
        with self._lock:
            pos = self._next
            self._next = pos + 1
        rec = self.recorded.get(pos)
        if rec is None or (rec.fingerprint == fp and rec.name == name and rec.kind == kind):
            return pos, rec
        return pos, self.replayed(pos, kind, name, fp)

    @property
    def next_position(self) -> int:
        return self._next

    def reserve(self, estimate_usd: float, name: str, pos: int) -> int:
        """Before an attempt: hold its estimate against the budget, or suspend the run."""
        if self.budget is None:
            return 0
        usd_limit, token_limit = self.budget
        estimate = round(estimate_usd * 1_000_000)
        with self._lock:
            projected = self.spent_micros + self.reserved_micros + estimate
            over_usd = usd_limit is not None and projected > usd_limit
            over_tokens = token_limit is not None and self.spent_tokens > token_limit
            if not (over_usd or over_tokens):
                self.reserved_micros += estimate
                return estimate
        spent = f"${self.spent_micros / 1e6:.6f} spent, ${self.reserved_micros / 1e6:.6f} reserved"
        limit = f"${usd_limit / 1e6:.6f}" if over_usd and usd_limit is not None else "tokens"
        reason = (
            f"step {name!r} (position {pos}) would pass the budget: {spent}, estimate "
            f"${estimate / 1e6:.6f}, budget {limit} ({self.spent_tokens} tokens used)"
        )
        self.suspend(reason)
        raise BudgetExceeded(
            f"run {self.run_id} suspended: {reason}",
            fix=f"raise it with `lil runs budget {self.run_id} --usd N`, then call the run again",
            run_id=self.run_id,
            step=name,
            position=pos,
        )

    def suspend(self, reason: str) -> None:
        """Journal that the run stops to wait (budget, approval, ``suspend()``); caller raises."""
        rec = {"k": "suspend", "run": self.run_id, "epoch": self.epoch, "reason": reason}
        self.journal.append([rec | {"ts": time.time()}])

    def settle(self, reserved: int, cost: dict[str, Any] | None) -> None:
        """After an attempt: release its reservation and count what it really cost."""
        if not reserved and not cost:
            return
        with self._lock:
            self.reserved_micros -= reserved
            if cost:
                self.spent_micros += cost["usd_micros"]
                self.spent_tokens += cost["in"] + cost["out"]

    def skip_to(self, position: int) -> None:
        """After replaying a block that held nested steps, continue numbering past them."""
        with self._lock:
            self._next = max(self._next, position)

    def first_attempt(self, pos: int) -> int:
        """The attempt number of a fresh call at ``pos`` (above any superseded attempt there)."""
        return self.floor.get(pos, 0) + 1

    def rewind(self, pos: int) -> None:
        """Supersede what the journal holds from ``pos`` on: the changed code runs it again."""
        rec = {"k": "rewind", "run": self.run_id, "epoch": self.epoch, "pos": pos}
        self.journal.append([rec | {"ts": time.time()}])
        with self._lock:
            for p in [p for p in self.recorded if p >= pos]:
                self.floor[p] = max(self.floor.get(p, 0), self.recorded.pop(p).attempt)
            self.last_recorded = max(self.recorded, default=-1)

    def replayed(self, pos: int, kind: str, name: str, fp: str) -> StepRecord | None:
        """What the journal holds at this position; raise if the code now calls something else
        (or, with ``on_change="rerun"``, supersede it and from here on run the new code)."""
        rec = self.recorded.get(pos)
        if rec is None:
            return None
        if rec.fingerprint == fp and rec.name == name and rec.kind == kind:
            return rec  # the same call as journaled: the replay's hot path
        changed = rec.kind != kind or rec.name != name
        # "*": a step a fork copied (journal._fork.ANY_INPUT) replays whatever its inputs now are
        other_input = rec.fingerprint != fp and rec.fingerprint != "*"
        if self.on_change == "rerun" and (changed or (rec.status == "completed" and other_input)):
            self.rewind(pos)
            return None
        if changed:
            raise NonDeterminismError(
                f"run {self.run_id}: at position {pos} the journal recorded {rec.kind} "
                f"{rec.name!r}, but the code now calls {kind} {name!r}",
                fix=_DIVERGED_FIX.format(run=self.run_id),
                run_id=self.run_id,
                step=name,
                position=pos,
            )
        if rec.status == "completed" and other_input:
            raise NonDeterminismError(
                f"run {self.run_id}: step {name!r} at position {pos} is called with different "
                "arguments than the journal recorded for it",
                fix=_DIVERGED_FIX.format(run=self.run_id),
                run_id=self.run_id,
                step=name,
                position=pos,
            )
        return rec

    def has_later(self, pos: int) -> bool:
        """True if the journal holds anything after this position: the run went past it."""
        return self.last_recorded > pos

    def output(self, rec: StepRecord) -> Any:
        """Decode a completed step's journaled output (fetching it if it was too big to inline)."""
        assert rec.codec is not None
        data = rec.output
        if rec.codec == "json" and data is not None:  # the common case, decoded directly
            try:
                return _json_decode(data.decode("utf-8"))
            except ValueError:
                pass  # the codec reports it properly
        if data is None:
            codec, data = self.journal.get_output(
                self.run_id, self.epoch, rec.position, rec.attempt
            )
            return self.codec.decode(codec, data, what=f"output of step {rec.name!r}")
        return self.codec.decode(rec.codec, data, what=f"output of step {rec.name!r}")

    def record(self, k: str, pos: int, att: int, kind: str, name: str, fp: str, **f: Any) -> Record:
        return {
            "k": k,
            "run": self.run_id,
            "epoch": self.epoch,
            "pos": pos,
            "att": att,
            "kind": kind,
            "name": name,
            "fp": fp,
            "ts": time.time(),
            **f,
        }

    def error_record(
        self, exc: BaseException, ident: tuple[Any, ...], cost: dict[str, Any] | None = None
    ) -> Record:
        """The ``err`` record of a failed attempt, with the exception kept if it can be encoded."""
        try:
            codec, data = self.codec.encode(exc, what="exception")
        except CodecError:
            codec, data = None, None
        rec = self.record(
            "err", *ident, err=error_dict(exc), codec=codec, out=data, next=self.next_position
        )
        if cost:
            rec["cost"] = cost
        return rec

    def step_info(
        self, pos: int, att: int, kind: str, name: str, feedback: str | None = None
    ) -> StepInfo:
        import hashlib

        raw = f"{self.journal.journal_id}/{self.run_id}/{self.epoch}/{pos}".encode()
        return StepInfo(
            run_id=self.run_id,
            name=name,
            position=pos,
            attempt=att,
            kind=kind,
            idempotency_key="lil-" + hashlib.sha256(raw).hexdigest()[:32],
            feedback=feedback,
        )


_DIVERGED_FIX = (
    "if you changed the workflow on purpose, start over with `lil runs reset {run}` (or call it "
    "with a new run_id); otherwise make the order and inputs of steps deterministic (no branching "
    "on time, randomness or I/O outside steps)"
)

current_run: ContextVar[RunContext | None] = ContextVar("letitloop_run", default=None)
# called in the executing thread after each step of runs started while it is set (a notebook's
# progress view): (run, position, name, status) with status "replayed" | "completed" | "failed"
Observer = Callable[["RunContext", int, str, str], None]
observer_var: ContextVar[Observer | None] = ContextVar("letitloop_observer", default=None)
# what current_step() describes: (run, position, attempt, kind, name); the StepInfo with its
# hashed idempotency key is only built when asked for, not for every step that runs
StepRef = tuple[RunContext, int, int, str, str, "str | None"]
current_step_var: ContextVar[StepRef | None] = ContextVar("letitloop_step", default=None)


def require_run(what: str) -> RunContext:
    ctx = current_run.get()
    if ctx is None:
        raise NotInDurableContextError(
            f"{what} was called outside a durable function",
            fix="call it from a function decorated with @durable (or @durable_async), or from a "
            "%%durable notebook cell",
        )
    return ctx


def current_step() -> StepInfo:
    """The step or marker executing now, with its stable ``idempotency_key`` for external APIs."""
    ref = current_step_var.get()
    if ref is None:
        raise NotInDurableContextError(
            "current_step() was called outside a step function or atomic_marker block",
            fix="call it inside the function passed to step(), or inside `with atomic_marker(...)`",
        )
    ctx, pos, att, kind, name, feedback = ref
    return ctx.step_info(pos, att, kind, name, feedback)
