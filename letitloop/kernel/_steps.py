"""``step()`` and ``async_step()``: one position of a run, replayed from the journal or run as
its next attempt.

Each call takes the run's next position. If the journal holds a completed step there with the
same name and inputs, its output comes back without running; a different name or different
inputs is a ``NonDeterminismError`` (or, for notebook cells, a rewind); otherwise the function
runs under its policies (retries, timeouts, validation, cache, budget, rate limits) and its
output is journaled durably before the next step starts. ``step.map`` fans out (``_fanout``).
"""

from __future__ import annotations

import functools

from letitloop.errors import (
    CodecError,
    ConfigError,
    ReplayedStepError,
)
from letitloop.journal import check_text
from letitloop.kernel import _cost, _tracing
from letitloop.kernel._attempts import (
    Attempts,
    cache_key,
    dead_lettered,
    function_name,
    is_dead,
    time_limit,
)
from letitloop.kernel._context import (
    RunContext,
    current_run,
    current_step_var,
    require_run,
)
from letitloop.kernel._fingerprint import fingerprint
from letitloop.kernel._policy import CLOCK, StepOptions, StepTimeout, pop_step_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any, ParamSpec, TypeVar

    from letitloop.journal import CacheEntry, StepRecord

    P = ParamSpec("P")
    R = TypeVar("R")


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"{what} name must be a non-empty string, got {name!r}",
            fix=f'give the {what} a literal name: {what}("fetch_user", ...)',
        )
    return check_text(name, f"{what} name {name!r}", ConfigError)


def _replay_failure(ctx: RunContext, rec: StepRecord) -> BaseException:
    """The journaled failure of a step the run went past: rebuilt if possible, else described."""
    if rec.codec and rec.output is not None:
        try:
            exc = ctx.codec.decode(rec.codec, rec.output, what=f"error of step {rec.name!r}")
            if isinstance(exc, BaseException):
                return exc
        except CodecError:
            pass
    err = rec.error or {}
    return ReplayedStepError(
        f"step {rec.name!r} (position {rec.position}) of run {ctx.run_id} raised "
        f"{err.get('type')}: {err.get('message')} when it ran, and the run continued past it",
        fix="this is the journaled outcome, replayed so the workflow takes the same path; reset "
        f"the run (`lil runs reset {ctx.run_id}`) to run it again",
        run_id=ctx.run_id,
        step=rec.name,
        position=rec.position,
    )


def _begin_step(
    ctx: RunContext, name: str, kind: str, fn: Callable[..., Any], args: Any, kwargs: Any
) -> Any:
    """Position, fingerprint and what replay says: a finished record, or the attempt to run."""
    fp = fingerprint(args, kwargs)  # never raises: the position is taken right after it
    if ctx.on_change == "rerun":  # an edited step function counts as a change too
        fp += ":" + code_digest(fn)
    pos, rec = ctx.take_step(kind, name, fp)
    return pos, fp, rec, _attempt_at(ctx, name, pos, rec)


def _attempt_at(ctx: RunContext, name: str, pos: int, rec: StepRecord | None) -> int:
    """0 if the journal's record at ``pos`` is the outcome to replay, else the attempt to run."""
    if rec is None:
        return ctx.first_attempt(pos)
    if rec.status == "completed":
        return 0
    if is_dead(rec):  # stays stopped until someone re-arms it
        raise dead_lettered(ctx.run_id, name, pos, "its last journaled attempt")
    if rec.status == "failed" and ctx.has_later(_span_last(rec, pos)):
        return 0
    return rec.attempt + 1


def _span_last(rec: StepRecord, pos: int) -> int:
    """The last position inside a failed step: the steps and markers nested in it are its own,
    so only a record after them says the run went past the failure (a nested marker that was
    in doubt and then resolved lets the step run again)."""
    return rec.next_position - 1 if rec.next_position is not None else pos


def code_digest(fn: Callable[..., Any]) -> str:
    """A short hash of a function's code (bytecode, constants, names), "" if it has none."""
    import hashlib

    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(fn, "__code__", None)
    if code is None:
        return ""
    return hashlib.sha256(_code_bytes(code)).hexdigest()[:12]


def _code_bytes(code: Any) -> bytes:
    """Bytecode, names and constants, nested code objects included, without their addresses
    or file names (a cell's code is compiled under a new name each time it runs)."""
    parts = [code.co_code, repr(code.co_names).encode()]
    for const in code.co_consts:
        parts.append(_code_bytes(const) if hasattr(const, "co_code") else repr(const).encode())
    return b"\x00".join(parts)


def _replayed_value(ctx: RunContext, rec: StepRecord) -> Any:
    if rec.status == "failed":
        raise _replay_failure(ctx, rec)
    if rec.next_position is not None:
        ctx.skip_to(rec.next_position)
    return ctx.output(rec)


def step(name: str, fn: Callable[..., R], /, *args: Any, _kind: str = "step", **kwargs: Any) -> R:
    """Run ``fn(*args, **kwargs)`` as a journaled step, or return its journaled output on replay."""
    ctx = current_run.get() or require_run("step()")
    if type(name) is not str or not name or not name.isprintable():  # hot path: a quick look
        _check_name(name, "step")
    over = pop_step_options(kwargs) if kwargs else None  # before the fingerprint: not inputs
    fp = fingerprint(args, kwargs)  # (as _begin_step does, inline: this is every replay's path)
    if ctx.on_change == "rerun":
        fp += ":" + code_digest(fn)
    pos, rec = ctx.take_step(_kind, name, fp)
    if (
        rec is not None
        and rec.status == "completed"
        and rec.next_position is None
        and ctx.observer is None
        and not _tracing.ACTIVE
    ):
        return ctx.output(rec)  # type: ignore[no-any-return]  # a replayed step, the hot path
    att = _attempt_at(ctx, name, pos, rec)
    if att == 0:
        assert rec is not None
        if _tracing.ACTIVE:
            _tracing.mark(pos, rec.attempt, _kind, name, "replayed", rec.status == "failed")
        if ctx.observer is not None:
            ctx.observer(ctx, pos, name, "replayed")
        if rec.next_position is None and rec.status == "completed":
            return ctx.output(rec)  # type: ignore[no-any-return]
        return _replayed_value(ctx, rec)  # type: ignore[no-any-return]
    opts = ctx.defaults.merged(over)  # resolved only for a step that runs
    tries = Attempts(ctx, (pos, _kind, name, fp), rec, opts)
    key = cache_key(fn, args, kwargs, opts.cache_key) if opts.cache else None
    if key is not None and (hit := _cache_hit(ctx, key)) is not None:
        if _tracing.ACTIVE:
            _tracing.mark(pos, tries.att, _kind, name, "hit")
        return _from_cache(ctx, tries, hit)  # type: ignore[no-any-return]
    while True:
        tries.sleep()
        held = ctx.reserve(opts.estimate, name, pos)  # or the run suspends here
        ident = tries.ident()
        ctx.journal.append([ctx.record("step", *ident)], sync=False)
        token = current_step_var.set((ctx, pos, tries.att, _kind, name, tries.feedback))
        spent, cost_token = _cost.begin()
        span = _tracing.begin_step(pos, tries.att, _kind, name, key) if _tracing.ACTIVE else None
        try:
            with time_limit(opts.timeout, name):
                if opts.limit is None:
                    out = fn(*args, **tries.kwargs(fn, kwargs))
                else:  # waits for the shared rate limit's capacity first
                    call = functools.partial(fn, *args, **tries.kwargs(fn, kwargs))
                    from letitloop.kernel import _limits

                    out = _limits.call(ctx, opts.limit, opts.estimate_tokens, (pos, name), call)
            _cost.from_output(spent, out)
            if opts.limit is not None:
                from letitloop.kernel import _limits

                _limits.settle(ctx, opts.limit, opts.estimate_tokens, spent)
        except Exception as exc:
            if span is not None:
                _tracing.step_failed(span, exc)
            if not _policied(opts):
                ctx.journal.append([ctx.error_record(exc, ident, _cost.journaled(spent))])
                raise
            tries.failed(exc, _cost.journaled(spent))  # raises unless another attempt follows
            continue
        finally:
            if span is not None:
                _tracing.end_step(span, spent)
            ctx.settle(held, _cost.journaled(spent))
            _cost.end(cost_token)
            current_step_var.reset(token)
        if not tries.rejected(out, _cost.journaled(spent)):
            break
    nxt = ctx.next_position if ctx.next_position > pos + 1 else None
    ctx.journal.append([_completion(ctx, ident, out, nxt, spent, key, fn, opts)])
    if ctx.observer is not None:
        ctx.observer(ctx, pos, name, "completed")
    return out


def _completion(
    ctx: RunContext,
    ident: tuple[Any, ...],
    out: Any,
    nxt: int | None,
    spent: _cost.Cost,
    key: str | None,
    fn: Callable[..., Any],
    opts: StepOptions,
) -> dict[str, Any]:
    """The ``ok`` record of an attempt that produced ``out`` (and its cache entry, if cached).
    Encoding happens here, so an unencodable output records nothing."""
    name, pos = ident[3], ident[0]
    codec, data = ctx.codec.encode(
        out, what=f"output of step {name!r}", run_id=ctx.run_id, step=name, position=pos
    )
    ok = ctx.record("ok", *ident, codec=codec, out=data, next=nxt)
    if codec == "pickle":  # unreadable without unpickling: keep what it looked like now
        from letitloop.journal import short_repr

        ok["shown"] = short_repr(out)
    if cost := _cost.journaled(spent):
        ok["cost"] = cost
    if key is not None:
        ok["cache"] = {"hit": False, "saved": 0}
        expires = CLOCK.time() + opts.ttl if opts.ttl is not None else None
        ctx.journal.cache_put(key, function_name(fn), (codec, data), spent["usd_micros"], expires)
    return ok


def _cache_hit(ctx: RunContext, key: str) -> CacheEntry | None:
    hit = ctx.journal.cache_get(key)
    if hit is None or hit.output is None or hit.codec is None:
        return None
    if hit.expires is not None and hit.expires <= CLOCK.time():
        return None
    return hit


def _from_cache(ctx: RunContext, tries: Attempts, hit: CacheEntry) -> Any:
    """Complete the step with a cached output: no call, and the saving journaled."""
    assert hit.codec is not None and hit.output is not None
    value = ctx.codec.decode(hit.codec, hit.output, what=f"cached output of step {tries.name!r}")
    ok = ctx.record("ok", *tries.ident(), codec=hit.codec, out=hit.output, next=None)
    ok["cache"] = {"hit": True, "saved": hit.cost_micros}
    ctx.journal.append([ok])
    return value


def _policied(opts: StepOptions) -> bool:
    """Whether failures go through the retry/validation bookkeeping, or just fail the step."""
    return opts.retry is not None or opts.validate is not None or opts.timeout is not None


def async_step(
    name: str, fn: Callable[..., Any], /, *args: Any, _kind: str = "step", **kwargs: Any
) -> Coroutine[Any, Any, Any]:
    """The async twin of ``step``: ``await async_step("name", fn, ...)``.

    The position is taken when ``async_step`` is called, so steps started together under
    ``asyncio.gather`` get the same positions on every replay, and run concurrently.
    """
    ctx = require_run("async_step()")
    _check_name(name, "step")
    opts = ctx.defaults.merged(pop_step_options(kwargs))
    pos, fp, rec, att = _begin_step(ctx, name, _kind, fn, args, kwargs)
    return _async_body(ctx, (pos, att, _kind, name, fp), rec, fn, args, kwargs, opts)


async def _async_body(
    ctx: RunContext,
    ident: tuple[Any, ...],
    rec: StepRecord | None,
    fn: Callable[..., Any],
    args: Any,
    kwargs: Any,
    opts: StepOptions,
) -> Any:
    import asyncio
    import inspect

    pos, att, kind, name, fp = ident
    if att == 0:
        assert rec is not None
        if _tracing.ACTIVE:
            _tracing.mark(pos, rec.attempt, kind, name, "replayed", rec.status == "failed")
        if ctx.observer is not None:
            ctx.observer(ctx, pos, name, "replayed")
        if rec.output is None and rec.status == "completed":
            return await asyncio.to_thread(ctx.output, rec)
        return _replayed_value(ctx, rec)
    tries = Attempts(ctx, (pos, kind, name, fp), rec, opts)
    key = cache_key(fn, args, kwargs, opts.cache_key) if opts.cache else None
    if key is not None and (hit := await asyncio.to_thread(_cache_hit, ctx, key)) is not None:
        if _tracing.ACTIVE:
            _tracing.mark(pos, tries.att, kind, name, "hit")
        return await asyncio.to_thread(_from_cache, ctx, tries, hit)
    while True:
        await CLOCK.asleep(tries.wait())
        held = ctx.reserve(opts.estimate, name, pos)  # or the run suspends here
        ctx.inflight += 1
        ident = tries.ident()
        ctx.journal.append([ctx.record("step", *ident)], sync=False)
        token = current_step_var.set((ctx, pos, tries.att, kind, name, tries.feedback))
        spent, cost_token = _cost.begin()
        span = _tracing.begin_step(pos, tries.att, kind, name, key) if _tracing.ACTIVE else None
        try:
            if opts.limit is None:
                out = fn(*args, **tries.kwargs(fn, kwargs))
            else:  # waits for the shared rate limit's capacity first
                call = functools.partial(fn, *args, **tries.kwargs(fn, kwargs))
                from letitloop.kernel import _limits

                out = _limits.acall(ctx, opts.limit, opts.estimate_tokens, (pos, name), call)
            if inspect.isawaitable(out):
                try:  # a real cancellation: the attempt stops where it awaits
                    out = await asyncio.wait_for(out, opts.timeout)
                except TimeoutError:
                    raise StepTimeout(
                        f"step {name!r} ran past its timeout of {opts.timeout} s"
                    ) from None
            _cost.from_output(spent, out)
            if opts.limit is not None:
                from letitloop.kernel import _limits

                _limits.settle(ctx, opts.limit, opts.estimate_tokens, spent)
        except Exception as exc:
            if span is not None:
                _tracing.step_failed(span, exc)
            cost = _cost.journaled(spent)
            if not _policied(opts):
                err = ctx.error_record(exc, ident, cost)
                await asyncio.to_thread(ctx.journal.append, [err])
                raise
            await asyncio.to_thread(tries.failed, exc, cost)
            continue
        finally:
            if span is not None:
                _tracing.end_step(span, spent)
            ctx.settle(held, _cost.journaled(spent))
            ctx.inflight -= 1
            _cost.end(cost_token)
            current_step_var.reset(token)
        if not await asyncio.to_thread(tries.rejected, out, _cost.journaled(spent)):
            break
    ok = _completion(ctx, ident, out, None, spent, key, fn, opts)
    await asyncio.to_thread(ctx.journal.append, [ok])
    if ctx.observer is not None:
        ctx.observer(ctx, pos, name, "completed")
    return out


def _map_step(name: str, fn: Callable[[Any], Any], items: Any, /, **options: Any) -> list[Any]:
    """``step.map(name, fn, items, on=None, max_in_flight=None, **policies)``: run ``fn(item)``
    for every item as a durable child run and return the results in item order (see
    ``letitloop.kernel._fanout.map_step``, imported on first use with its executors)."""
    from letitloop.kernel._fanout import map_step

    return map_step(name, fn, items, **options)


def _async_map_step(
    name: str, fn: Callable[[Any], Any], items: Any, /, **options: Any
) -> Coroutine[Any, Any, list[Any]]:
    """``await async_step.map(name, fn, items, ...)``: the async twin of ``step.map``."""
    from letitloop.kernel._fanout import async_map_step

    return async_map_step(name, fn, items, **options)


step.map = _map_step  # type: ignore[attr-defined]  # step.map("embed", fn, items)
async_step.map = _async_map_step  # type: ignore[attr-defined]
