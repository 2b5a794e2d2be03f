"""``@durable`` and ``@durable_async``: a run's identity, its lease, and its call.

A durable call opens its run (identity: workflow name + run key), takes the run's lease so no
other process executes it at the same time, and then runs the function, whose ``step()`` calls
(``_steps``) replay from the journal or run. A completed run returns its journaled result; a
durable call made inside another is a child run, journaled as one step of its parent.
"""

from __future__ import annotations

import functools
import os
import sys
import time

from letitloop._keys import existing_key, load_or_create_key
from letitloop.errors import (
    CodecError,
    ConfigError,
    JournalError,
    RunArgumentsError,
    RunLockedError,
    Suspended,
)
from letitloop.journal import error_dict
from letitloop.kernel import _tracing
from letitloop.kernel._calls import bind_call, is_async_function, signature
from letitloop.kernel._codec import Codec
from letitloop.kernel._context import (
    RunContext,
    current_run,
    current_step_var,
)
from letitloop.kernel._entry import sign_entry
from letitloop.kernel._fingerprint import fingerprint
from letitloop.kernel._frozen import replace
from letitloop.kernel._options import DurableOptions
from letitloop.kernel._steps import async_step, step

# Only the type checker reads these: importing typing, inspect, step.map's executors or the
# preview helpers would cost the first ``from letitloop import durable, step`` several ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ParamSpec, TypeVar, overload

    from letitloop.journal import Journal, QueueSpec
    from letitloop.kernel._options import JournalSpec
    from letitloop.kernel._policy import Budget, Retry

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
        # an in-memory journal lives and dies with this process: its key need not be stored,
        # unless a copy of a stored journal carried that journal's key to it
        secret = (
            existing_key(journal.journal_id) or os.urandom(32)
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
    #: open the run without waiting for its start to be durable: only for runs whose first
    #: step is journaled at once (``step.map`` items), whose write then carries it (one fsync)
    lazy_open = False
    root: str | None = None  # the top run of a child started in another process (its board)
    recover: tuple[QueueSpec, bool] | None = None  # its recovery queue (``kernel._recover``)
    entry: str | None = None  # the signed entry point, once opened

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
        if opts.recover:
            from letitloop.kernel._recover import recover_spec

            self.recover = recover_spec(opts.recover)
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
        # authenticated: resume by name imports only what the key signed
        self.entry = sign_entry(
            self.codec, self.run_id, self.workflow, _entry_point(self.fn), self.args
        )
        state = self.journal.open_run(
            run_id=self.run_id,
            workflow=self.workflow,
            key=self.key,
            args=self.args,
            entry=self.entry,
            parent=parent,
            lease=True,
            lock_timeout=self.opts.lock_timeout,
            reopen=self.opts.reopen,
            durable=not self.lazy_open,
        )
        if state.status == "completed":
            assert state.result is not None
            return _Done(self.codec.decode(*state.result, what=f"result of run {self.run_id}"))
        budget = self.opts.budget
        limits = (budget.usd_micros, budget.tokens) if budget else None
        ctx = RunContext(
            self.journal, self.codec, state, self.opts.step_defaults(), limits, self.opts.on_change
        )
        outer = current_run.get()  # a child shares the blackboard of its call tree's top run
        inherited = outer.root if outer is not None and outer.run_id == parent else parent
        ctx.root = self.root or inherited or self.run_id
        return ctx

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

    def hold(self) -> bool:
        """Hold this run on its recovery queue if it is recoverable (``kernel._recover``)."""
        if self.recover is None:
            return False
        from letitloop.kernel._recover import hold

        run = {"run_id": self.run_id, "workflow": self.workflow, "key": self.key}
        return hold(self.journal, self.recover, run | {"entry": self.entry, "args": self.args})


def _unhold(inv: _Invocation) -> None:
    """The held run ends in this process: its item says how (the exception propagating now)."""
    from letitloop.kernel._recover import unhold

    unhold(inv.journal, inv.run_id, sys.exc_info()[1])


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
    held = False
    try:
        held = inv.recover is not None and parent is None and inv.hold()
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
        if held:
            _unhold(inv)
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
    held = False
    try:
        if inv.recover is not None and parent is None:
            held = await asyncio.to_thread(inv.hold)
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
        if held:
            await asyncio.to_thread(_unhold_with, inv, sys.exc_info()[1])
        await asyncio.to_thread(_quietly, inv.journal.release_run, inv.run_id)


def _unhold_with(inv: _Invocation, exc: BaseException | None) -> None:
    from letitloop.kernel._recover import unhold

    unhold(inv.journal, inv.run_id, exc)


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
        retry: Retry | None = ...,
        timeout: float | None = ...,
        budget: Budget | None = ...,
        on_change: str = ...,
        reopen: bool = ...,
        limit: object = ...,
        recover: object = ...,
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
        wrapper.start = functools.partial(_start, wrapper)  # type: ignore[attr-defined]
        return wrapper

    return wrap(fn) if fn is not None else wrap


def _start(wrapper: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``workflow.start(*args)``: the call in a background thread; returns its RunHandle."""
    from letitloop.kernel._queue import start

    return start(wrapper, args, kwargs)


def run_again(
    fn: Callable[..., Any],
    workflow: str,
    args: Any,
    kwargs: Any,
    journal: Journal,
    key: str | None = None,
    lock_timeout: float | None = None,
    recover: bool | None = None,
) -> tuple[str, Callable[[], Any]]:
    """The run id a durable function computes for these arguments under ``workflow``, and a
    call that runs it on ``journal`` (for ``lil runs resume``); ``key`` runs it under that run
    key instead, as a fork (whose id no call computes; a call that does is refused).
    ``recover``: True makes the run recoverable (``workflow.start``: on the workflow's queue,
    else ``default``), False never (a worker executes it: the queue item is the worker's);
    None as the workflow declares."""
    import asyncio

    opts = getattr(fn, "__letitloop_options__", None)
    inner = getattr(fn, "__wrapped__", None)
    if opts is None or inner is None:
        raise ConfigError(f"{getattr(fn, '__qualname__', fn)!r} is not a @durable function")
    if opts.journal is None:
        opts = replace(opts, journal=journal)
    if lock_timeout is not None and lock_timeout > opts.lock_timeout:
        opts = replace(opts, lock_timeout=lock_timeout)  # a worker waits out a lapsing lease
    inv = _Invocation(opts, inner, args, kwargs, workflow)
    if key is not None:
        inv.key, inv.run_id, inv.as_fork = key, f"{inv.workflow}:{key}", True
    if recover is False:
        inv.recover = None
    elif recover and inv.recover is None:
        from letitloop.kernel._recover import recover_spec

        inv.recover = recover_spec(True)
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
        wrapper.start = functools.partial(_start, wrapper)  # type: ignore[attr-defined]
        return wrapper

    return wrap(fn) if fn is not None else wrap


def run_workflow(fn: Callable[..., Any], args: Any, kwargs: Any, **options: Any) -> Any:
    """Call ``fn`` as a durable run without decorating it (used by ``lil`` and the notebook)."""
    inv = _Invocation(DurableOptions.build(**options), fn, args, kwargs)
    if is_async_function(fn):
        import asyncio

        return asyncio.run(_run_async(inv, None))
    return _run_sync(inv, None)
