"""Every error letitloop raises, in one hierarchy (the base layer: every part of letitloop
imports it, and it imports nothing of letitloop).

    LetItLoopError                  base: .run_id .step .position .fix, and a short .title
    ├── ConfigError                 an option or the journal location is wrong
    ├── JournalError                the journal cannot serve the request
    │   ├── JournalUnavailableError     the owner process could not be started or reached
    │   └── JournalVersionError         client and owner speak different protocol or schema versions
    │   └── ApprovalDecidedError        an approval was already decided (first decision wins)
    │   └── BoardConflictError          a blackboard write expected another version of its key
    ├── RunLockedError              another process is executing this run right now
    │   └── LeaseLostError              this process's lease was taken over; its writes are refused
    ├── RunCancelledError           someone cancelled the run; it stops and is not resumed
    ├── NonDeterminismError         replay met a different step than the journal recorded
    ├── RunArgumentsError           a fixed run id was called with other arguments than journaled
    ├── ForkedRunError              a call computed a fork's run id (its steps are another run's)
    ├── InDoubtError                a side effect started but never recorded completion
    ├── NotInDurableContextError    step()/atomic_marker() called outside a durable function
    ├── DeadLetteredError           a step used up its retry or validation attempts
    ├── Suspended                   the run stopped on purpose and waits (not a failure)
    │   ├── BudgetExceeded              the next step would take the run past its budget
    │   └── ApprovalPending             the run waits for a person to approve or reject
    ├── SupervisorError             a supervised process kept crashing, or cannot be supervised
    ├── MapItemError                an item of step.map failed (the others stay journaled)
    ├── ContextBudgetError          assembled context cannot fit its token budget (before any call)
    ├── RunFailedError              a run waited for (a queued or started run's handle) failed
    ├── ResultTimeoutError          a handle's result did not come in time (a TimeoutError)
    ├── ReplayedStepError           a journaled step failure, replayed, whose exception is lost
    └── CodecError                  a value cannot be stored or loaded
        ├── UnencodableError            the value's type has no safe encoding
        └── TamperedDataError           an authenticated blob failed its HMAC check

Each message says what happened, with ids, and how to fix it; the same facts are kept as
fields so the CLI, TUI and editor can render them.
"""

from __future__ import annotations


class LetItLoopError(Exception):
    """Base of all letitloop errors: a message that ends with the fix, plus structured fields."""

    title = "letitloop error"
    #: a subclass's own fields (beyond run_id, step, position), kept when the error crosses a
    #: process boundary as data (``to_dict``; the owner's replies)
    extra_fields: tuple[str, ...] = ()

    def __init__(
        self,
        message: str,
        *,
        fix: str | None = None,
        run_id: str | None = None,
        step: str | None = None,
        position: int | None = None,
    ) -> None:
        self.message = message
        self.fix = fix
        self.run_id = run_id
        self.step = step
        self.position = position
        super().__init__(f"{message}\n  fix: {fix}" if fix else message)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with every field (an error crosses processes: ``@supervise``, ``step.map``)."""
        return (_rebuild, (type(self), self.args, self.__dict__.copy()))

    def to_dict(self) -> dict[str, object]:
        """The error as plain data, for `--json` output and the journal."""
        return {
            "type": type(self).__name__,
            "title": self.title,
            "message": self.message,
            "fix": self.fix,
            "run_id": self.run_id,
            "step": self.step,
            "position": self.position,
        } | {name: getattr(self, name, None) for name in self.extra_fields}


def _rebuild(
    cls: type[LetItLoopError], args: tuple[object, ...], state: dict[str, object]
) -> LetItLoopError:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class ConfigError(LetItLoopError):
    """An option, argument or the journal location is invalid."""

    title = "invalid configuration"


class JournalError(LetItLoopError):
    """The journal cannot serve the request (unknown run, conflicting write, ...)."""

    title = "journal error"


class JournalUnavailableError(JournalError):
    """The owner process could not be started or did not answer."""

    title = "journal unavailable"


class DiskFullError(JournalError):
    """The disk holding the journal is full: nothing of the refused write was kept."""

    title = "no space left for the journal"


class JournalVersionError(JournalError):
    """Client and owner (or journal file) are of incompatible versions."""

    title = "journal version mismatch"


class ApprovalDecidedError(JournalError):
    """Someone else decided this approval first; the first decision stands."""

    title = "approval already decided"


class BoardConflictError(JournalError):
    """A blackboard write (``put(key, value, expect=version)``) expected another version of its
    key than the journal holds: someone else wrote it first (compare-and-swap). ``.key``,
    ``.expected`` and ``.current`` say which key and both versions."""

    title = "blackboard write conflict"
    extra_fields = ("key", "expected", "current")

    def __init__(
        self, message: str, *, key: str, expected: int, current: int, **kw: object
    ) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.key = key
        self.expected = expected
        self.current = current


class RunCancelledError(LetItLoopError):
    """The run was cancelled (``lil runs cancel``, the dashboard): it does not run again."""

    title = "run cancelled"


class RunLockedError(LetItLoopError):
    """Another process is executing this run; only one may at a time."""

    title = "run is locked"


class LeaseLostError(RunLockedError):
    """This process's lease on a run was taken over (it was silent past ``LIL_LEASE_TTL``);
    its writes are refused and it must stop executing the run (fencing)."""

    title = "run lease lost"


class NonDeterminismError(LetItLoopError):
    """Replay met a different step (name, kind or inputs) than the journal holds."""

    title = "replay diverged from the journal"


class RunArgumentsError(LetItLoopError):
    """A fixed ``run_id``/``goal_id`` names a run journaled for other arguments: returning its
    result (or resuming it) for this call would be wrong. ``.journaled`` and ``.called`` hold
    both argument sets as text."""

    title = "run id reused with other arguments"

    def __init__(self, message: str, *, journaled: str, called: str, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.journaled = journaled
        self.called = called


class ForkedRunError(LetItLoopError):
    """A call computed the run id of a fork (``lil runs fork``, ``fork_run``): the fork's reused
    steps were computed for the run it was forked from, so replaying them for this call would
    be wrong. ``.origin`` is that run's id; a fork runs with ``run_fork`` or ``lil runs
    resume``."""

    title = "run id of a fork"

    def __init__(self, message: str, *, origin: str, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.origin = origin


class InDoubtError(LetItLoopError):
    """A side effect's block started but never recorded completion."""

    title = "side effect in doubt"


class NotInDurableContextError(LetItLoopError):
    """step() or atomic_marker() was called outside a durable function."""

    title = "not inside a durable function"


class ReplayedStepError(LetItLoopError):
    """A journaled step failure, replayed, whose original exception is lost."""

    title = "replayed step failure"


class CodecError(LetItLoopError):
    """A value cannot be encoded into, or decoded from, the journal."""

    title = "cannot encode or decode a value"


class UnencodableError(CodecError):
    """A value has no safe encoding (nothing is recorded for it)."""

    title = "value cannot be journaled"


class TamperedDataError(CodecError):
    """An authenticated blob failed its HMAC check; it is never loaded."""

    title = "journal data failed authentication"


class DeadLetteredError(LetItLoopError):
    """A step used up its attempts; the run stops there until the step is re-armed."""

    title = "step dead-lettered"


class Suspended(LetItLoopError):
    """The run stopped on purpose and waits for a decision; calling it again continues."""

    title = "run suspended"


class BudgetExceeded(Suspended):
    """The next step would take the run past its budget; raise the budget to continue."""

    title = "budget exceeded"


class ApprovalPending(Suspended):
    """The run journaled an approval request and stopped; decide it, then call the run again."""

    title = "waiting for approval"

    def __init__(self, message: str, *, approval_id: str = "", **fields: object) -> None:
        super().__init__(message, **fields)  # type: ignore[arg-type]
        self.approval_id = approval_id


class SupervisorError(LetItLoopError):
    """A supervised function or script kept crashing (the breaker tripped), or cannot be run."""

    title = "supervision stopped"


class ContextBudgetError(LetItLoopError):
    """Context assembled for a model cannot fit its token budget even after compaction (its
    pinned entries alone are over it): refused before any model call. ``.budget``, ``.needed``
    and ``.counter`` hold the numbers and how tokens were counted."""

    title = "context over its token budget"
    extra_fields = ("budget", "needed", "counter")

    def __init__(
        self, message: str, *, budget: int, needed: int, counter: str, **kw: object
    ) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.budget = budget
        self.needed = needed
        self.counter = counter


class MapItemError(LetItLoopError):
    """An item of ``step.map`` failed; the map step fails with the first failure in item order."""

    title = "a mapped item failed"


class RunFailedError(LetItLoopError):
    """A run whose result was waited for (``handle.result()``) failed, or was cancelled."""

    title = "run failed"


class ResultTimeoutError(LetItLoopError, TimeoutError):
    """``handle.result(timeout=)`` ran out of time; the run goes on (it is not cancelled)."""

    title = "result not ready"
