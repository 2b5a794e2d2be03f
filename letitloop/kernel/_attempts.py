"""The attempts of one step call under its policy: what each failure journals, and what next.

A failed attempt's ``err`` record carries, besides the error, the policy's bookkeeping: its class
(see ``kernel._policy``), the transport and validation failures counted against the current
budget (``tries``, ``vtries``), the validator's critique (``feedback``), when the next attempt may
start (``retry_at``) and whether the step is dead-lettered (``dead``). Everything needed to go on
after a crash is therefore in the journal: the wait, the counts and the critique.
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager, contextmanager, nullcontext

from letitloop.errors import ConfigError, DeadLetteredError
from letitloop.journal import error_dict
from letitloop.kernel._policy import (
    CLOCK,
    INVALID,
    NO_RETRY,
    TIMEOUT,
    TRANSIENT,
    Invalid,
    StepOptions,
    StepTimeout,
    classify,
)

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from letitloop.journal import StepRecord
    from letitloop.kernel._context import RunContext


class Attempts:
    """Bookkeeping for the attempts of one step call; the caller runs the function."""

    def __init__(
        self,
        ctx: RunContext,
        ident: tuple[int, str, str, str],
        rec: StepRecord | None,
        opts: StepOptions,
    ) -> None:
        self.ctx, self.opts = ctx, opts
        self.pos, self.kind, self.name, self.fp = ident
        self.retry = opts.retry or NO_RETRY
        self.att = rec.attempt + 1 if rec else ctx.first_attempt(self.pos)
        prior = rec.error if rec is not None and rec.status != "completed" else None
        fresh = prior is None or rec is None or rec.resolution == "rearm"
        self.tries = 0 if fresh else int(prior.get("tries", 0))  # type: ignore[union-attr]
        self.vtries = 0 if fresh else int(prior.get("vtries", 0))  # type: ignore[union-attr]
        self.feedback: str | None = prior.get("feedback") if prior else None
        self.retry_at: float | None = None if fresh else prior.get("retry_at")  # type: ignore[union-attr]

    def ident(self) -> tuple[int, int, str, str, str]:
        return (self.pos, self.att, self.kind, self.name, self.fp)

    def wait(self) -> float:
        """Seconds still to wait before this attempt (a backoff journaled before a crash)."""
        if self.retry_at is None:
            return 0.0
        return max(0.0, self.retry_at - CLOCK.time())

    def sleep(self) -> None:
        if self.retry_at is not None:
            CLOCK.sleep(self.wait())

    def kwargs(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's keywords, plus ``feedback=`` for a function that takes it."""
        if self.feedback is not None and _takes_feedback(fn):
            return {**kwargs, "feedback": self.feedback}
        return kwargs

    def failed(self, exc: BaseException, cost: dict[str, Any] | None = None) -> float:
        """Journal a failed attempt; return the wait before the next, or raise to give up."""
        cls = classify(exc, self.retry)
        retrying = cls in (TRANSIENT, TIMEOUT)
        if retrying:
            self.tries += 1
        again = retrying and self.tries < self.retry.attempts
        delay = self.retry.delay(self.tries) if again else 0.0
        dead = retrying and not again and self.retry.attempts > 1
        retry_at = CLOCK.time() + delay if again else None
        self._journal(exc, cls, retry_at=retry_at, dead=dead, cost=cost)
        if dead:
            raise self._dead(f"{self.tries} attempts") from exc
        if not again:
            raise exc
        return delay

    def rejected(self, out: Any, cost: dict[str, Any] | None = None) -> bool:
        """Run ``validate=`` on an output: True means journaled as invalid, run again now."""
        if self.opts.validate is None:
            return False
        try:
            verdict = self.opts.validate(out)
        except Invalid as exc:
            verdict = exc
        if verdict is True or verdict is None:
            return False
        reason = verdict.reason if isinstance(verdict, Invalid) else "the output was rejected"
        self.vtries += 1
        self.feedback = reason
        dead = self.vtries >= self.opts.max_validation_attempts
        self._journal(Invalid(reason), INVALID, retry_at=None, dead=dead, output=out, cost=cost)
        if dead:
            raise self._dead(f"{self.vtries} rejected outputs (last: {reason})")
        return True

    def _journal(
        self,
        exc: BaseException,
        cls: str,
        *,
        retry_at: float | None,
        dead: bool,
        output: Any = None,
        cost: dict[str, Any] | None = None,
    ) -> None:
        err = error_dict(exc) | {
            "class": cls,
            "tries": self.tries,
            "vtries": self.vtries,
            "feedback": self.feedback,
            "retry_at": retry_at,
            "dead": dead,
        }
        codec = data = None
        try:  # the exception, or the rejected output, kept for people to look at
            codec, data = self.ctx.codec.encode(exc if cls != INVALID else output, what="error")
        except Exception:
            pass
        rec = self.ctx.record(
            "err", *self.ident(), err=err, codec=codec, out=data, next=self.ctx.next_position
        )
        if cost:
            rec["cost"] = cost
        self.ctx.journal.append([rec])
        self.att += 1
        self.retry_at = retry_at

    def _dead(self, why: str) -> DeadLetteredError:
        return dead_lettered(self.ctx.run_id, self.name, self.pos, why)


def dead_lettered(run_id: str, name: str, pos: int, why: str) -> DeadLetteredError:
    return DeadLetteredError(
        f"step {name!r} (position {pos}) of run {run_id} is dead-lettered after {why}",
        fix=f"see its attempts with `lil runs show {run_id}`; fix the cause, then `lil runs retry "
        f"{run_id}` gives it a fresh attempt budget (its history is kept)",
        run_id=run_id,
        step=name,
        position=pos,
    )


def is_dead(rec: StepRecord) -> bool:
    return bool(
        rec.status == "failed" and rec.error and rec.error.get("dead") and rec.resolution != "rearm"
    )


def cache_key(fn: Callable[..., Any], args: Any, kwargs: Any, extra: str | None) -> str:
    """The response-cache key: the function (name and source), its inputs, the user's key."""
    import hashlib
    import inspect

    from letitloop.kernel._fingerprint import fingerprint

    name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        source = code.co_code.hex() if code is not None else ""
    parts = (name, hashlib.sha256(source.encode()).hexdigest(), fingerprint(args, kwargs))
    return hashlib.sha256("\0".join((*parts, extra or "")).encode()).hexdigest()


def function_name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


@functools.cache
def _takes_feedback(fn: Callable[..., Any]) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "feedback" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


_NO_LIMIT = nullcontext()


def time_limit(seconds: float | None, name: str) -> AbstractContextManager[None]:
    """Interrupt a synchronous attempt after ``seconds`` with ``StepTimeout`` (SIGALRM);
    without a timeout, a shared no-op (this is on every step's path)."""
    return _NO_LIMIT if seconds is None else _alarm(seconds, name)


@contextmanager
def _alarm(seconds: float, name: str) -> Iterator[None]:
    """SIGALRM after ``seconds``.

    Limits: only in the main thread (elsewhere, use ``async_step``, which cancels for real); the
    exception arrives between Python bytecodes, so a long call in C is interrupted when it
    returns; code that catches every exception can swallow it.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        raise ConfigError(
            f"timeout= on the synchronous step {name!r} needs the main thread",
            fix="call it from the main thread, or make it an async step (async_step) where "
            "timeouts cancel the attempt",
        )

    def expire(signum: int, frame: Any) -> None:
        raise StepTimeout(f"step {name!r} ran past its timeout of {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
