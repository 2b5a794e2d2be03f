"""``@durable``, ``@durable_async``, ``step()`` and ``async_step()``: run, journal and replay.

A durable call opens its run (identity: workflow name + run key), takes the run's lease so no
other process executes it at the same time, and then runs the function. Each ``step()`` takes
the next position; if the journal holds a completed step there (same name, same inputs) its
output is returned without running, otherwise the step runs as a new attempt and its output is
journaled durably before the next step starts. A durable call made inside another is a child run,
journaled as one step of its parent.
"""

from __future__ import annotations

import functools
import os
import sys
import time

from letitloop._keys import load_or_create_key
from letitloop.errors import (
    CodecError,
    ConfigError,
    JournalError,
    ReplayedStepError,
    RunArgumentsError,
    RunLockedError,
    Suspended,
)
from letitloop.journal import check_text, error_dict
from letitloop.kernel import _cost, _tracing
from letitloop.kernel._attempts import (
    Attempts,
    cache_key,
    dead_lettered,
    function_name,
    is_dead,
    time_limit,
)
from letitloop.kernel._calls import bind_call, is_async_function, signature
from letitloop.kernel._codec import Codec
from letitloop.kernel._context import (
    RunContext,
    current_run,
    current_step_var,
    require_run,
)
from letitloop.kernel._entry import sign_entry
from letitloop.kernel._fingerprint import fingerprint
from letitloop.kernel._frozen import replace
from letitloop.kernel._options import DurableOptions
from letitloop.kernel._policy import CLOCK, StepOptions, StepTimeout, pop_step_options

# Only the type checker reads these: importing typing, inspect, step.map's executors or the
# preview helpers would cost the first ``from letitloop import durable, step`` several ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any, ParamSpec, TypeVar, overload

    from letitloop.journal import CacheEntry, Journal, StepRecord
    from letitloop.kernel._options import JournalSpec

    P = ParamSpec("P")
    R = TypeVar("R")


_codecs: dict[tuple[str, bool], Codec] = {}


def resolve_journal(spec: JournalSpec) -> Journal:
    """A Journal object for an option value: an instance as is, else the owner journal of a path."""
    if spec is not None and not isinstance(spec, (str, os.PathLike)):
        return spec
    from letitloop.journal import open_journal

    return open_journal(spec)


def codec_for(journal: Journal, allow_pickle: bool = True) -> Codec:
    key = (journal.journal_id, allow_pickle)
    codec = _codecs.get(key)
    if codec is None:
        # an in-memory journal lives and dies with this process: its key need not be stored
        secret = (
            os.urandom(32)
            if journal.location == ":memory:"
            else load_or_create_key(journal.journal_id)
        )
        # setdefault: two threads making the first codec at once must agree on one key
        codec = _codecs.setdefault(key, Codec(secret, allow_pickle=allow_pickle))
    return codec


def workflow_name(fn: Callable[..., Any]) -> str:
    module = fn.__module__
    if module == "__main__":
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        module = os.path.splitext(os.path.basename(main))[0] if main else "__main__"
    return f"{module}.{fn.__qualname__}"


def _entry_point(fn: Callable[..., Any]) -> str | None:
    """``module:qualname`` (or ``/path/script.py:qualname`` for a script run as ``__main__``) if
    the function can be imported again later, to resume the run by name."""
    if "<locals>" in fn.__qualname__:
        return None
    module = fn.__module__
    if module == "__main__":
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name and spec.name != "__main__":
            module = spec.name  # python -m package.module
        else:
            path = getattr(main, "__file__", None)
            if not path or not path.endswith(".py"):
                return None  # python -c, a notebook or the REPL: nothing to import again
            module = os.path.abspath(path)
    return f"{module}:{fn.__qualname__}"


class _Invocation:
    """One call of a durable function: resolved options, run identity and encoded arguments."""

    #: journal the run's ``done`` record without waiting for it to be durable: only for runs
    #: whose last step holds the result (``step.map`` items), which a replay completes again
    lazy_done = False

    def __init__(
        self,
        opts: DurableOptions,
        fn: Callable[..., Any],
        args: Any,
        kwargs: Any,
        workflow: str | None = None,
    ) -> None:
        self.opts = opts
        self.fn = fn
        self.call_args, self.call_kwargs = args, kwargs
        self.workflow = workflow or opts.name or workflow_name(fn)
        self.journal = resolve_journal(opts.journal)
        self.codec = codec_for(self.journal, opts.allow_pickle)
        # a bad call fails before journaling
        arguments, bound_args, bound_kwargs = bind_call(fn, args, kwargs)
        self.fixed = opts.run_key(arguments)
        self.key = self.fixed or fingerprint(bound_args, bound_kwargs)[:16]
        self.run_id = f"{self.workflow}:{self.key}"
        self.as_fork = False  # run as a fork (``run_again(key=)``), not as a call computed it
        try:
            codec, data = self.codec.encode(
                [list(args), kwargs], what=f"arguments of {self.workflow}"
            )
            self.args: tuple[str, bytes] | None = (codec, data)
        except CodecError:
            self.args = None  # resuming by name is then impossible; the run itself still works

    def open(self, parent: str | None) -> RunContext | _Done:
        if self.fixed is not None:
            self._check_fixed_run()
        state = self.journal.open_run(
            run_id=self.run_id,
            workflow=self.workflow,
            key=self.key,
            args=self.args,
            entry=sign_entry(  # authenticated: resume by name imports only what the key signed
                self.codec, self.run_id, self.workflow, _entry_point(self.fn), self.args
            ),
            parent=parent,
            lease=True,
            lock_timeout=self.opts.lock_timeout,
            reopen=self.opts.reopen,
        )
        if state.status == "completed":
            assert state.result is not None
            return _Done(self.codec.decode(*state.result, what=f"result of run {self.run_id}"))
        budget = self.opts.budget
        limits = (budget.usd_micros, budget.tokens) if budget else None
        return RunContext(
            self.journal, self.codec, state, self.opts.step_defaults(), limits, self.opts.on_change
        )

    def _check_fixed_run(self) -> None:
        """A fixed run id names one call: before anything is written, refuse a call whose run
        id a fork holds (``ForkedRunError``), or whose arguments differ from those journaled
        under it (``RunArgumentsError``).

        A fork's key has a ``~`` (``kernel._fork.FORK_MARK``), which a derived key never has;
        a fork made before forks had keys of their own shows in the run's header (its first
        step is a copied one: ``RunState.forked``), or has not run yet (try 0). Only those are
        looked up (one read of the run's first event, for what it was forked from): the
        re-call of a finished run, the common case, costs what it did."""
        arguments = not self.opts.ignore_args and self.args is not None
        fork_key = not self.as_fork and "~" in self.key
        if not (arguments or fork_key):
            return
        try:
            state = self.journal.open_run(  # a look at its arguments: not its 1000 steps
                run_id=self.run_id, workflow=self.workflow, key=self.key, lease=False, steps=False
            )
        except RunLockedError:
            return  # someone executes it right now: the leased open says so
        except JournalError:
            return  # no such run yet: this call starts it
        if fork_key or (not self.as_fork and (state.forked or state.attempt == 0)):
            from letitloop.kernel._fork import refuse_fork

            refuse_fork(self.journal, self.workflow, self.run_id)
        if not arguments:
            return
        if state.args is None or state.args == self.args or state.status == "reset":
            return
        assert self.args is not None
        try:
            old = self.codec.decode(*state.args, what=f"arguments of run {self.run_id}")
            if old == [list(self.call_args), self.call_kwargs]:
                return  # equal values whose bytes differ (pickle)
        except CodecError:
            pass
        from letitloop.journal import call_preview

        journaled = call_preview(self.workflow, *state.args)
        called = call_preview(self.workflow, *self.args)
        raise RunArgumentsError(
            f"run {self.run_id} was journaled for {journaled}, but this call is {called}: a "
            f"fixed run id names one run, so this call would get the other call's result",
            fix=f"give each call its own key, e.g. a placeholder per argument: "
            f'run_id="{self.fixed}-{{{self._first_param()}}}" (or leave run_id out: the key '
            f"then derives from the arguments); or start this run over with "
            f"`lil runs reset {self.run_id}`; or pass ignore_args=True if one result for "
            f"any arguments is what you mean",
            run_id=self.run_id,
            journaled=journaled,
            called=called,
        )

    def _first_param(self) -> str:
        params = list(signature(self.fn).parameters)
        return params[0] if params else "arg"

    def finish_record(self, ctx: RunContext, result: Any) -> dict[str, Any]:
        codec, data = self.codec.encode(
            result, what=f"result of workflow {self.workflow}", run_id=self.run_id
        )
        rec = {
            "k": "done",
            "run": self.run_id,
            "epoch": ctx.epoch,
            "codec": codec,
            "out": data,
            "ts": time.time(),
        }
        if codec == "pickle":  # unreadable without unpickling: keep what it looked like now
            from letitloop.journal import short_repr

            rec["shown"] = short_repr(result)
        return rec

    def fail_record(self, ctx: RunContext, exc: BaseException) -> dict[str, Any]:
        return {
            "k": "fail",
            "run": self.run_id,
            "epoch": ctx.epoch,
            "try": ctx.state.attempt,
            "err": error_dict(exc),
            "ts": time.time(),
        }


class _Done:
    """An already completed run: its journaled result."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _run_sync(inv: _Invocation, parent: str | None) -> Any:
    ctx = inv.open(parent)
    if isinstance(ctx, _Done):
        return ctx.value
    run_token = current_run.set(ctx)
    step_token = current_step_var.set(None)
    traced = _tracing.begin_run(inv.journal, inv.workflow, ctx) if _tracing.wanted() else None
    failure: BaseException | None = None
    try:
        try:
            result = inv.fn(*inv.call_args, **inv.call_kwargs)
            inv.journal.append([inv.finish_record(ctx, result)], sync=not inv.lazy_done)
        except Suspended:
            raise  # journaled as suspended, not failed: calling the run again continues it
        except (Exception, KeyboardInterrupt) as exc:  # an interrupted run is not running
            _quietly(inv.journal.append, [inv.fail_record(ctx, exc)])
            failure = exc
            raise
        return result
    finally:
        if traced is not None:
            _tracing.end_run(traced, failure)
        current_step_var.reset(step_token)
        current_run.reset(run_token)
        _quietly(inv.journal.release_run, inv.run_id)


async def run_child_async(
    opts: DurableOptions, fn: Callable[..., Any], args: Any, kwargs: Any, parent: str
) -> Any:
    """Run ``fn`` as a child run of run ``parent`` with ``opts`` (an integration's nested unit of
    work that must replay on its own, e.g. a tool call inside an agent team's step)."""
    return await _run_async(_Invocation(opts, fn, tuple(args), dict(kwargs)), parent)


async def _run_async(inv: _Invocation, parent: str | None) -> Any:
    import asyncio

    ctx = await asyncio.to_thread(inv.open, parent)
    if isinstance(ctx, _Done):
        return ctx.value
    run_token = current_run.set(ctx)
    step_token = current_step_var.set(None)
    traced = _tracing.begin_run(inv.journal, inv.workflow, ctx) if _tracing.wanted() else None
    failure: BaseException | None = None
    try:
        try:
            try:
                result = await inv.fn(*inv.call_args, **inv.call_kwargs)
            finally:
                while ctx.inflight:  # steps still running after a sibling raised: let them land
                    await asyncio.sleep(0.005)
            await asyncio.to_thread(inv.journal.append, [inv.finish_record(ctx, result)])
        except Suspended:
            raise
        except Exception as exc:
            await asyncio.to_thread(_quietly, inv.journal.append, [inv.fail_record(ctx, exc)])
            failure = exc
            raise
        return result
    finally:
        if traced is not None:
            _tracing.end_run(traced, failure)
        current_step_var.reset(step_token)
        current_run.reset(run_token)
        await asyncio.to_thread(_quietly, inv.journal.release_run, inv.run_id)


def _quietly(fn: Callable[..., Any], *args: Any) -> None:
    """Best-effort journaling on a path that is already raising: the original error wins."""
    try:
        fn(*args)
    except Exception:
        pass


if TYPE_CHECKING:  # the overloads are for the type checker: typing is not imported at run time

    @overload
    def durable(fn: Callable[P, R], /) -> Callable[P, R]: ...
    @overload
    def durable(
        *,
        name: str | None = ...,
        run_id: str | None = ...,
        goal_id: str | None = ...,
        journal: JournalSpec = ...,
        lock_timeout: float = ...,
        allow_pickle: bool = ...,
        ignore_args: bool = ...,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def durable(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Make a function durable: kill its process anywhere and call it again to resume.

    Usable bare (``@durable``) or with options (``@durable(goal_id="sync")``); see
    ``DurableOptions`` for each option.
    """
    opts = DurableOptions.build(**options)

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        if is_async_function(func):
            raise ConfigError(
                f"@durable was applied to the coroutine function {func.__qualname__}",
                fix="use @durable_async for async def functions",
            )

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            inv = _Invocation(opts, func, args, kwargs)
            parent = current_run.get()
            if parent is not None:  # a child run, journaled as one step of its parent
                child = functools.partial(_run_sync, inv, parent.run_id)
                return step(inv.workflow, lambda _run_id: child(), inv.run_id, _kind="child")
            return _run_sync(inv, None)

        wrapper.__letitloop_options__ = opts  # type: ignore[attr-defined]
        return wrapper

    return wrap(fn) if fn is not None else wrap


def run_again(
    fn: Callable[..., Any],
    workflow: str,
    args: Any,
    kwargs: Any,
    journal: Journal,
    key: str | None = None,
) -> tuple[str, Callable[[], Any]]:
    """The run id a durable function computes for these arguments under ``workflow``, and a
    call that runs it on ``journal`` (for ``lil runs resume``); ``key`` runs it under that run
    key instead, as a fork (whose id no call computes; a call that does is refused)."""
    import asyncio

    opts = getattr(fn, "__letitloop_options__", None)
    inner = getattr(fn, "__wrapped__", None)
    if opts is None or inner is None:
        raise ConfigError(f"{getattr(fn, '__qualname__', fn)!r} is not a @durable function")
    if opts.journal is None:
        opts = replace(opts, journal=journal)
    inv = _Invocation(opts, inner, args, kwargs, workflow)
    if key is not None:
        inv.key, inv.run_id, inv.as_fork = key, f"{inv.workflow}:{key}", True
    if inv.journal.journal_id != journal.journal_id:
        raise ConfigError(
            f"workflow {workflow} writes to the journal {inv.journal.location}, not "
            f"{journal.location}",
            fix="resume it with --journal pointing at the journal its decorator names",
        )
    if is_async_function(inner):
        return inv.run_id, lambda: asyncio.run(_run_async(inv, None))
    return inv.run_id, lambda: _run_sync(inv, None)


def durable_async(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """The async twin of ``durable``, for ``async def`` functions that ``await async_step(...)``."""
    opts = DurableOptions.build(**options)

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        if not is_async_function(func):
            raise ConfigError(
                f"@durable_async was applied to {func.__qualname__}, which is not async def",
                fix="use @durable for plain functions",
            )

        @functools.wraps(func)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            import asyncio

            inv = await asyncio.to_thread(_Invocation, opts, func, args, kwargs)
            parent = current_run.get()
            if parent is not None:
                child = functools.partial(_run_async, inv, parent.run_id)
                return await async_step(
                    inv.workflow, lambda _run_id: child(), inv.run_id, _kind="child"
                )
            return await _run_async(inv, None)

        wrapper.__letitloop_options__ = opts  # type: ignore[attr-defined]
        return wrapper

    return wrap(fn) if fn is not None else wrap


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


def run_workflow(fn: Callable[..., Any], args: Any, kwargs: Any, **options: Any) -> Any:
    """Call ``fn`` as a durable run without decorating it (used by ``lil`` and the notebook)."""
    inv = _Invocation(DurableOptions.build(**options), fn, args, kwargs)
    if is_async_function(fn):
        import asyncio

        return asyncio.run(_run_async(inv, None))
    return _run_sync(inv, None)
