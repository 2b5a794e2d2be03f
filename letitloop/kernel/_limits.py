"""Shared rate limits for steps: ``step(..., limit="openai:gpt-4o")`` waits for capacity first.

A ``Limit`` (requests and tokens a minute) is declared once, in code (``Limit(...)``) or in
``[tool.letitloop.limits]`` of the project root's ``pyproject.toml``, and shared by every process
of the journal: the journal keeps the buckets (``journal._limits``), so ten processes or a Dask
cluster together stay within the provider's limit instead of each retrying on 429s.

Before each attempt the step takes one request and its ``estimate_tokens=`` from the journal.
Told to wait, it sleeps that long (never polls faster) and asks again; a wait longer than
``WAIT_NOTE`` seconds is journaled as a ``wait`` event, which ``lil runs show``, ``lil-tui`` and
the widgets display. After the call its estimate is corrected by the tokens the response reports
(``usage``, or ``record_cost``). A 429 that slips through (another client of the same key) blocks
the limit for the provider's ``Retry-After`` and the call is tried again, up to ``MAX_429`` times.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from letitloop.errors import ConfigError
from letitloop.journal import check_name, check_rate, check_tokens
from letitloop.kernel._policy import CLOCK

if TYPE_CHECKING:
    from letitloop.kernel._context import RunContext

T = TypeVar("T")
WAIT_NOTE = 0.5  # seconds of waiting worth an event people can see
MAX_429 = 5  # Retry-After rounds one attempt goes through before its 429 counts as a failure
DEFAULT_RETRY_AFTER = 1.0  # seconds, when a 429 names no Retry-After

_declared: dict[str, Limit] = {}
_declared_lock = threading.Lock()
_config: dict[Path, dict[str, Limit]] = {}


@dataclass(frozen=True)
class Limit:
    """A provider's limit shared by every process of a journal.

    Attributes:
        name: what the provider limits, e.g. ``"openai:gpt-4o"``; steps name it with ``limit=``.
        rpm: requests a minute, or None.
        tpm: tokens a minute, or None; a step's ``estimate_tokens=`` is taken before its call
            and corrected from the usage the response reports.

    Declaring one in code makes its name usable as ``limit="..."``; a declaration in
    ``[tool.letitloop.limits]`` does the same from configuration.
    """

    name: str
    rpm: int | None = None
    tpm: int | None = None

    def __post_init__(self) -> None:
        check_name(self.name)
        check_rate(self.rpm, f"Limit({self.name!r}) rpm")
        check_rate(self.tpm, f"Limit({self.name!r}) tpm")
        if self.rpm is None and self.tpm is None:
            raise ConfigError(
                f"Limit({self.name!r}) limits nothing",
                fix=f'give rpm= or tpm=, e.g. Limit("{self.name}", rpm=500, tpm=150_000)',
            )
        with _declared_lock:
            _declared[self.name] = self


def check_limit_option(value: object) -> None:
    """``limit=`` must be a ``Limit`` or the name of one (checked when the step is called)."""
    if not isinstance(value, (str, Limit)):
        raise ConfigError(
            f"limit= must be a Limit or a limit's name, got {value!r}"[:200],
            fix='pass limit="openai:gpt-4o" (declared in [tool.letitloop.limits]) or a Limit',
        )


def resolve(spec: str | Limit, cwd: Path | None = None) -> Limit:
    """The ``Limit`` a step names: itself, one declared in code, or one in the configuration."""
    if isinstance(spec, Limit):
        return spec
    found = _declared.get(spec) or configured(cwd).get(spec)
    if found is None:
        raise ConfigError(
            f"no rate limit named {spec!r} is declared",
            fix=f'declare it once: [tool.letitloop.limits] "{spec}" = {{ rpm = 500 }} in '
            f'pyproject.toml, or Limit("{spec}", rpm=500) in code',
        )
    return found


def configured(cwd: Path | None = None) -> dict[str, Limit]:
    """The limits of ``[tool.letitloop.limits]`` in the project root's pyproject.toml (read
    once; a file another user could write is ignored, see ``journal._trust``)."""
    from letitloop.journal import tool_table

    start = (cwd or Path.cwd()).resolve()
    cached = _config.get(start)
    if cached is not None:
        return cached
    table, where = tool_table("limits", start)
    limits: dict[str, Limit] = {}
    for name, spec in table.items():
        if not isinstance(spec, dict) or not set(spec) <= {"rpm", "tpm"}:
            raise ConfigError(
                f"[tool.letitloop.limits] {name!r} in {where} must be a table of rpm and tpm, "
                f"got {spec!r}"[:300],
                fix=f'write "{name}" = {{ rpm = 500, tpm = 150000 }}',
            )
        limits[name] = Limit(name, rpm=spec.get("rpm"), tpm=spec.get("tpm"))
    _config[start] = limits
    return limits


def _note(ctx: RunContext, where: tuple[int, str], limit: Limit, seconds: float) -> None:
    """Journal the wait (``lil runs show``, lil-tui) and tell the cell's progress line."""
    if ctx.observer is not None:
        ctx.observer(ctx, where[0], where[1], f"waiting for capacity of {limit.name}")
    rec = {"k": "wait", "run": ctx.run_id, "epoch": ctx.epoch, "at": where[0], "name": where[1]}
    ctx.journal.append(
        [rec | {"limit": limit.name, "seconds": round(seconds, 3)} | {"ts": time.time()}],
        sync=False,
    )


def acquire(ctx: RunContext, limit: Limit, tokens: int, where: tuple[int, str]) -> float:
    """Take capacity for one call, sleeping as long as the journal says; the seconds waited."""
    waited, noted = 0.0, False
    while True:
        wait = ctx.journal.take_capacity(limit.name, limit.rpm, limit.tpm, tokens)
        if wait <= 0:
            return waited
        if not noted and wait + waited >= WAIT_NOTE:
            _note(ctx, where, limit, wait)
            noted = True
        CLOCK.sleep(wait)
        waited += wait


async def aacquire(ctx: RunContext, limit: Limit, tokens: int, where: tuple[int, str]) -> float:
    import asyncio

    waited, noted = 0.0, False
    while True:
        wait = await asyncio.to_thread(
            ctx.journal.take_capacity, limit.name, limit.rpm, limit.tpm, tokens
        )
        if wait <= 0:
            return waited
        if not noted and wait + waited >= WAIT_NOTE:
            await asyncio.to_thread(_note, ctx, where, limit, wait)
            noted = True
        await CLOCK.asleep(wait)
        waited += wait


def retry_after(exc: BaseException) -> float | None:
    """The seconds a 429 asks to wait (its ``Retry-After``), or None when ``exc`` is no 429."""
    from letitloop.kernel._policy import _status_code

    if _status_code(exc) != 429 and "ratelimit" not in type(exc).__name__.lower():
        return None
    for holder in (exc, getattr(exc, "response", None)):
        headers = getattr(holder, "headers", None)
        value = None
        if headers is not None:
            try:
                value = headers.get("retry-after") or headers.get("Retry-After")
            except Exception:
                value = None
        value = value if value is not None else getattr(holder, "retry_after", None)
        if value is not None:
            try:
                seconds = float(value)
            except (TypeError, ValueError):
                continue
            if seconds == seconds:  # not NaN
                return min(max(seconds, 0.0), 3600.0)
    return DEFAULT_RETRY_AFTER


def call(
    ctx: RunContext, spec: str | Limit, tokens: int, where: tuple[int, str], fn: Callable[[], T]
) -> T:
    """Run ``fn`` within the shared limit, going through up to ``MAX_429`` Retry-Afters."""
    limit = resolve(spec)
    check_tokens(tokens, "estimate_tokens=")
    for round_ in range(MAX_429 + 1):
        acquire(ctx, limit, tokens, where)
        try:
            return fn()
        except Exception as exc:
            seconds = retry_after(exc)
            if seconds is None or round_ == MAX_429:
                raise
            ctx.journal.block_capacity(limit.name, seconds)  # the bucket learns from it
    raise AssertionError("unreachable")


async def acall(
    ctx: RunContext,
    spec: str | Limit,
    tokens: int,
    where: tuple[int, str],
    fn: Callable[[], Awaitable[T] | T],
) -> T:
    import asyncio
    import inspect

    limit = resolve(spec)
    check_tokens(tokens, "estimate_tokens=")
    for round_ in range(MAX_429 + 1):
        await aacquire(ctx, limit, tokens, where)
        try:
            out = fn()
            return await out if inspect.isawaitable(out) else out
        except Exception as exc:
            seconds = retry_after(exc)
            if seconds is None or round_ == MAX_429:
                raise
            await asyncio.to_thread(ctx.journal.block_capacity, limit.name, seconds)
    raise AssertionError("unreachable")


def settle(ctx: RunContext, spec: str | Limit, tokens: int, spent: dict[str, Any]) -> None:
    """Correct the tokens taken for a call by what its response says it used."""
    limit = resolve(spec)
    used = int(spent.get("in", 0)) + int(spent.get("out", 0))
    if limit.tpm and (used or spent.get("recorded")) and used != tokens:
        ctx.journal.adjust_capacity(limit.name, max(-(2**30), min(2**30, used - tokens)))
