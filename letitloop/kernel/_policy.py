"""Step policies for AI work, declared once: retries, timeouts and semantic validation.

``Retry`` and ``StepOptions`` are accepted by ``@durable`` (defaults for every step of the run)
and by ``step()`` / ``async_step()`` (per call, as keywords ``retry=``, ``timeout=``,
``validate=``, ``max_validation_attempts=``). Every failed attempt is journaled with its class:

    transient   worth retrying: connection errors, timeouts of the callee, 408/429/5xx answers
    timeout     the attempt ran past ``timeout=`` seconds
    permanent   retrying will not help (our own configuration errors, other 4xx, anything else)
    invalid     the output failed ``validate=``; the next attempt sees the critique

A transient or timed-out attempt is retried after an exponential backoff with full jitter; the
time of the next attempt is journaled, so a process killed while waiting resumes the wait, not
restarts it. A step that exhausts its attempts is *dead-lettered*: the run fails, and calling it
again raises ``DeadLetteredError`` until ``lil runs retry RUN`` re-arms the step.
"""

from __future__ import annotations

import math
import time

from letitloop.errors import ConfigError, LetItLoopError
from letitloop.kernel._frozen import frozen

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

TRANSIENT, PERMANENT, TIMEOUT, INVALID = "transient", "permanent", "timeout", "invalid"
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT_NAMES = (
    "ratelimit",
    "timeout",
    "serviceunavailable",
    "apiconnection",
    "internalserver",
    "overloaded",
    "temporar",
)


class Invalid(Exception):
    """A validation verdict: ``validate=`` returns or raises ``Invalid("why")``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class StepTimeout(TimeoutError):
    """An attempt ran past its ``timeout=``."""


@frozen
class Retry:
    """How a step retries transient failures.

    Attributes:
        attempts: attempts in all, the first included (1 = no retry).
        backoff: the wait before the second attempt, in seconds.
        multiplier: each later wait is this much longer, up to ``max_backoff``.
        max_backoff: the longest wait, in seconds.
        jitter: wait a uniformly random time up to the computed one ("full jitter"), so that
            many clients failing together do not retry together.
        retry_on: exception types that are always transient, whatever the default says.
        classify: a hook ``exc -> "transient" | "permanent" | None`` (None: use the default).
    """

    attempts: int = 3
    backoff: float = 1.0
    multiplier: float = 2.0
    max_backoff: float = 60.0
    jitter: bool = True
    retry_on: tuple[type[BaseException], ...] = ()
    classify: Callable[[BaseException], str | None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ConfigError(f"Retry(attempts=) must be an int >= 1, got {self.attempts!r}")
        if self.backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ConfigError(
                "Retry needs backoff >= 0, max_backoff >= 0 and multiplier >= 1",
                fix="e.g. Retry(attempts=5, backoff=1.0, multiplier=2.0, max_backoff=60)",
            )

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed attempt."""
        import random

        ceiling = min(self.max_backoff, self.backoff * self.multiplier ** (failures - 1))
        return random.uniform(0, ceiling) if self.jitter else ceiling


NO_RETRY = Retry(attempts=1)


@frozen
class Budget:
    """What a run may spend. Before a step starts, if what was spent, plus what running steps
    reserved, plus the step's ``estimate=`` would pass it, the run suspends (``BudgetExceeded``);
    ``lil runs budget RUN --usd N`` raises it, and calling the run again continues."""

    usd: float | None = None
    tokens: int | None = None

    def __post_init__(self) -> None:
        if self.usd is None and self.tokens is None:
            raise ConfigError("Budget needs usd= or tokens=", fix="e.g. Budget(usd=2.00)")
        if self.usd is not None:
            usd_micros(self.usd, "Budget(usd=)")
        if self.tokens is not None:
            budget_tokens(self.tokens, "Budget(tokens=)")

    @property
    def usd_micros(self) -> int | None:
        return None if self.usd is None else usd_micros(self.usd, "Budget(usd=)")


def usd_micros(usd: object, what: str = "usd") -> int:
    """US dollars as the journal's integer micro-dollars, refusing what it cannot hold (NaN,
    infinity, negative, more than a billion dollars) with an error naming ``what``."""
    from letitloop.journal import MAX_MICROS

    ok = isinstance(usd, (int, float)) and not isinstance(usd, bool) and math.isfinite(usd)
    if not ok or not 0 <= usd * 1_000_000 <= MAX_MICROS:  # type: ignore[operator]
        raise ConfigError(
            f"{what} must be a number of US dollars from 0 to {MAX_MICROS // 1_000_000:,}, "
            f"got {usd!r}",
            fix="give an amount such as 5 or 0.25",
        )
    return round(usd * 1_000_000)  # type: ignore[operator]


def budget_tokens(tokens: object, what: str = "tokens") -> int:
    """A token budget the journal can hold: a whole number from 0 to MAX_BUDGET_TOKENS."""
    from letitloop.journal import MAX_BUDGET_TOKENS

    if isinstance(tokens, bool) or not isinstance(tokens, int):
        raise ConfigError(f"{what} must be a whole number of tokens, got {tokens!r}")
    if not 0 <= tokens <= MAX_BUDGET_TOKENS:
        raise ConfigError(
            f"{what} must be from 0 to {MAX_BUDGET_TOKENS:,} tokens, got {tokens!r}",
            fix="give a token count such as 100000",
        )
    return tokens


@frozen
class StepOptions:
    """Per-step policy; ``@durable`` takes the same fields as defaults for every step."""

    retry: Retry | None = None
    timeout: float | None = None
    validate: Callable[[Any], object] | None = None
    max_validation_attempts: int = 3
    cache: bool = False  # reuse the output of an earlier call with the same function and inputs
    cache_key: str | None = None  # mixed into the cache key, e.g. a prompt template's version
    ttl: float | None = None  # seconds a cached output stays usable
    estimate: float = 0.0  # USD this step is expected to cost, reserved against the budget
    limit: Any = None  # a shared rate limit (kernel._limits.Limit or its name) to wait for
    estimate_tokens: int = 0  # tokens the call is expected to use, taken from the limit first

    def __post_init__(self) -> None:
        if self.timeout is not None and (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, (int, float))
            or not 0 < self.timeout < 10**9  # NaN and infinity fail this too
        ):
            raise ConfigError(
                f"timeout must be a finite number of seconds > 0, got {self.timeout!r}",
                fix="pass e.g. timeout=30, or leave it out for no limit",
            )
        if (
            isinstance(self.estimate, bool)
            or not isinstance(self.estimate, (int, float))
            or not math.isfinite(self.estimate)
            or self.estimate < 0
        ):
            raise ConfigError(
                f"estimate must be a finite number of US dollars >= 0, got {self.estimate!r}",
                fix="pass e.g. estimate=0.05 (what the step is expected to cost)",
            )
        usd_micros(self.estimate, "estimate=")
        if self.ttl is not None and (
            isinstance(self.ttl, bool)
            or not isinstance(self.ttl, (int, float))
            or not 0 < self.ttl < 10**12
        ):
            raise ConfigError(
                f"ttl must be a finite number of seconds > 0, got {self.ttl!r}",
                fix="pass e.g. ttl=3600, or leave it out to keep cached outputs",
            )
        if self.max_validation_attempts < 1:
            raise ConfigError("max_validation_attempts must be >= 1")
        if self.limit is not None or self.estimate_tokens:
            from letitloop.journal import check_tokens
            from letitloop.kernel._limits import check_limit_option

            if self.limit is not None:
                check_limit_option(self.limit)
            check_tokens(self.estimate_tokens, "estimate_tokens=")

    def merged(self, over: StepOptions | None) -> StepOptions:
        """These defaults, with every field the per-step options set replaced."""
        if over is None:
            return self
        return StepOptions(
            retry=over.retry or self.retry,
            timeout=over.timeout if over.timeout is not None else self.timeout,
            validate=over.validate or self.validate,
            max_validation_attempts=over.max_validation_attempts,
            cache=over.cache or self.cache,
            cache_key=over.cache_key or self.cache_key,
            ttl=over.ttl if over.ttl is not None else self.ttl,
            estimate=over.estimate or self.estimate,
            limit=over.limit or self.limit,
            estimate_tokens=over.estimate_tokens or self.estimate_tokens,
        )


STEP_KEYWORDS = frozenset(
    {"retry", "timeout", "validate", "max_validation_attempts", "cache", "cache_key", "ttl"}
    | {"estimate", "estimate_tokens"}
)


def pop_step_options(kwargs: dict[str, Any]) -> StepOptions | None:
    """Take the policy keywords out of a ``step()`` call's keywords; the rest go to the function."""
    if not kwargs or (STEP_KEYWORDS.isdisjoint(kwargs) and not _names_limit(kwargs)):
        return None
    found = {k: kwargs.pop(k) for k in STEP_KEYWORDS & kwargs.keys()}
    if _names_limit(kwargs):  # limit=10 stays the function's own keyword
        found["limit"] = kwargs.pop("limit")
    return StepOptions(**found)


def _names_limit(kwargs: dict[str, Any]) -> bool:
    """``limit=`` is the step's only when it is a ``Limit`` or a string (a limit's name)."""
    value = kwargs.get("limit")
    return isinstance(value, str) or type(value).__name__ == "Limit"


def classify(exc: BaseException, retry: Retry) -> str:
    """The class of a failed attempt: the user's hook first, then the defaults above."""
    if retry.classify is not None:
        verdict = retry.classify(exc)
        if verdict in (TRANSIENT, PERMANENT):
            return verdict
    if isinstance(exc, StepTimeout):
        return TIMEOUT
    if retry.retry_on and isinstance(exc, retry.retry_on):
        return TRANSIENT
    if isinstance(exc, LetItLoopError):
        return PERMANENT  # our own configuration: retrying cannot fix it
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return TRANSIENT
    status = _status_code(exc)
    if status is not None:
        return TRANSIENT if status in _TRANSIENT_STATUS or status >= 500 else PERMANENT
    name = type(exc).__name__.lower()
    return TRANSIENT if any(n in name for n in _TRANSIENT_NAMES) else PERMANENT


def _status_code(exc: BaseException) -> int | None:
    """An HTTP status carried by provider errors (openai, anthropic, httpx, requests styles)."""
    for holder in (exc, getattr(exc, "response", None)):
        for attr in ("status_code", "status", "http_status"):
            value = getattr(holder, attr, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
    return None


class Clock:
    """Time as the policies see it; tests replace ``CLOCK`` to check backoffs without waiting."""

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        import asyncio

        if seconds > 0:
            await asyncio.sleep(seconds)


CLOCK = Clock()
