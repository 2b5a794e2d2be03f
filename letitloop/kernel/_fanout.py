"""``step.map``: fan a function out over items, each item a durable child run of its own.

The map is one step of the parent run (kind ``map``) whose output is the list of results, in
item order. While it runs, every item is a child run (``<workflow>.<name>``, keyed by the
parent's key, epoch, the map's position, the item's index and a digest of the item) that an
executor runs wherever it runs its tasks: a thread here, a Dask worker elsewhere. The worker
opens the journal itself (by its location: a DuckDB path on one machine, a PostgreSQL URL on
several), so an item's steps, attempts, costs and markers are journaled where it runs, and a
crash anywhere costs at most the items in flight:

* a killed worker: the executor runs the item again elsewhere; its finished steps replay and a
  marker left in doubt stops that item (never silently repeated);
* a killed parent: calling the workflow again re-enters the map step, finds the items whose
  child runs completed, takes their results from the journal, and submits only the others.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass
from queue import Empty, SimpleQueue
from typing import TYPE_CHECKING, Any, NamedTuple

from letitloop.errors import BudgetExceeded, ConfigError, MapItemError
from letitloop.journal import item_key
from letitloop.kernel._context import current_run, require_run
from letitloop.kernel._fingerprint import fingerprint
from letitloop.kernel._policy import STEP_KEYWORDS, StepOptions

if TYPE_CHECKING:
    from letitloop.distributed._executor import Executor
    from letitloop.journal import Journal
    from letitloop.kernel._context import RunContext


class MapUpdate(NamedTuple):
    """How far a running map got, for progress views (the notebook's progress line)."""

    name: str
    total: int
    done: int  # completed, replayed ones included
    running: int
    failed: int
    replayed: int  # taken from the journal without running
    dashboard: str | None  # the engine's dashboard, when it has one (Dask)


#: set by a progress view around a run: called on the orchestrating thread as items finish
map_observer_var: ContextVar[Callable[[MapUpdate], None] | None] = ContextVar(
    "letitloop_map_observer", default=None
)

#: how long an item's worker waits for an earlier attempt of the same item that still runs
#: (a parent killed and called again while a worker was mid-item) before giving up
ITEM_LOCK_TIMEOUT = 600.0


@dataclass(frozen=True)
class ItemCall:
    """One item's work, sent to an executor: picklable, and self-contained on the worker."""

    journal: Any  # a location (str) for executors in other processes, else the Journal itself
    parent: str
    workflow: str
    key: str
    name: str
    fn: Callable[..., Any]
    item: Any
    policies: tuple[tuple[str, Any], ...]
    root: str | None = None  # the top run of the parent's call tree (whose blackboard it shares)

    @property
    def run_id(self) -> str:
        return f"{self.workflow}:{self.key}"

    def __call__(self) -> Any:
        """Run the item as a durable child run (resumed if an earlier attempt left one)."""
        from letitloop.kernel._options import DurableOptions
        from letitloop.kernel._runtime import _Invocation, _run_sync

        opts = DurableOptions.build(
            run_id=self.key,
            journal=self.journal,
            lock_timeout=ITEM_LOCK_TIMEOUT,
            ignore_args=True,  # the key already holds the item's digest
        )
        args = (self.name, self.fn, dict(self.policies), self.item)
        inv = _Invocation(opts, _item_body, args, {}, self.workflow)
        # the item's step is durable before its run's completion is written: the completion
        # need not be waited for (a crash before it lands leaves a run whose replay completes)
        inv.lazy_done = True
        inv.lazy_open = True  # its opening is made durable with its step's write (one fsync)
        inv.root = self.root
        _spent.cost = (0, 0)
        value = _run_sync(inv, self.parent)
        return ItemOutcome(value, *_spent.cost)


class ItemOutcome:
    """What an item's call hands back: its result and what its run spent doing it.

    A plain object, not a tuple: Dask sizes every task result, and a tuple costs it a
    dispatch per element (20-70 us an item here) where an object costs one ``getsizeof``."""

    __slots__ = ("tokens", "usd_micros", "value")

    def __init__(self, value: Any, usd_micros: int, tokens: int) -> None:
        self.value = value
        self.usd_micros = usd_micros
        self.tokens = tokens

    def __reduce__(self) -> tuple[Any, ...]:
        return ItemOutcome, (self.value, self.usd_micros, self.tokens)


_spent = threading.local()  # the cost of the item run that just finished on this thread


def _item_body(name: str, fn: Callable[..., Any], policies: dict[str, Any], item: Any) -> Any:
    from letitloop.kernel._steps import step

    value = step(name, fn, item, **policies)
    ctx = current_run.get()
    if ctx is not None:
        _spent.cost = (ctx.spent_micros, ctx.spent_tokens)
    return value


def map_step(
    name: str,
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    /,
    *,
    on: Executor | None = None,
    max_in_flight: int | None = None,
    **policies: Any,
) -> list[Any]:
    """Run ``fn(item)`` for every item as a durable child run on ``on`` (an executor: threads by
    default, ``letitloop.distributed.DaskExecutor`` for a cluster) and return the results in item
    order; the whole map is one step of the calling run.

    ``max_in_flight`` bounds how many items are submitted at once (default: all); ``retry=``,
    ``timeout=``, ``validate=``, ``cache=`` and the other step policies apply to each item.
    """
    from letitloop.kernel._steps import step

    ctx = current_run.get() or require_run("step.map()")
    values = _checked(policies, max_in_flight, items)
    fan = functools.partial(_fan_out, ctx, name, fn, on, max_in_flight, policies)
    return step(name, fan, values, _kind="map")


def async_map_step(
    name: str,
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    /,
    *,
    on: Executor | None = None,
    max_in_flight: int | None = None,
    **policies: Any,
) -> Coroutine[Any, Any, list[Any]]:
    """The async twin of ``step.map``: ``await async_step.map("embed", fn, items, on=...)``.

    Its position is taken when it is called (as ``async_step`` does); the fan-out waits on a
    worker thread, so the event loop keeps running other steps meanwhile.
    """
    import asyncio

    from letitloop.kernel._steps import async_step

    ctx = require_run("async_step.map()")
    values = _checked(policies, max_in_flight, items)

    async def fan(vals: list[Any]) -> list[Any]:
        return await asyncio.to_thread(_fan_out, ctx, name, fn, on, max_in_flight, policies, vals)

    return async_step(name, fan, values, _kind="map")


def _checked(
    policies: dict[str, Any], max_in_flight: int | None, items: Iterable[Any]
) -> list[Any]:
    """Reject bad options before anything is journaled; the items, as a list."""
    unknown = set(policies) - STEP_KEYWORDS - {"limit"}  # limit=: each item's shared limit
    if unknown:
        raise ConfigError(
            f"step.map() got unknown keywords {sorted(unknown)}",
            fix=f"step.map takes on=, max_in_flight= and the step policies {sorted(STEP_KEYWORDS)}",
        )
    StepOptions(**policies)  # a bad policy fails here, before anything is journaled
    if max_in_flight is not None and (
        type(max_in_flight) is not int or max_in_flight < 1  # bool is no count
    ):
        raise ConfigError(
            f"max_in_flight must be an integer >= 1, got {max_in_flight!r}",
            fix="pass max_in_flight=64, or leave it out to submit every item at once",
        )
    return list(items)


def _fan_out(
    ctx: RunContext,
    name: str,
    fn: Callable[..., Any],
    on: Executor | None,
    max_in_flight: int | None,
    policies: dict[str, Any],
    values: list[Any],
) -> list[Any]:
    from letitloop.distributed._executor import ThreadExecutor

    step_var = _current_position(ctx)
    executor: Executor = on if on is not None else ThreadExecutor(max_in_flight or 8)
    journal = ctx.journal if executor.in_process else _location(ctx.journal)
    calls = [
        ItemCall(
            journal=journal,
            parent=ctx.run_id,
            workflow=f"{ctx.state.workflow}.{name}",
            key=item_key(ctx.state.key, ctx.epoch, step_var, i, fingerprint((v,), {})[:8]),
            name=name,
            fn=fn,
            item=v,
            policies=tuple(sorted(policies.items())),
            root=ctx.root,
        )
        for i, v in enumerate(values)
    ]
    results: list[Any] = [None] * len(calls)
    ledger = _Ledger(ctx, name, step_var, policies.get("estimate") or 0.0)
    todo = _finished(ctx, calls, results)
    observer = map_observer_var.get()
    replayed = len(calls) - len(todo)
    if replayed and observer is None:
        _tell_replayed(ctx, name, replayed, len(calls))

    def update(done: int, running: int, failed: int) -> None:
        if observer is not None:
            link = getattr(executor, "dashboard_link", None)
            observer(MapUpdate(name, len(calls), done + replayed, running, failed, replayed, link))

    update(0, 0, 0)
    try:
        window = max_in_flight or len(calls) or 1
        _submit_all(executor, calls, todo, results, window, update, ledger)
    finally:
        ledger.close()
        if on is None:
            executor.close()
    return results


class _Ledger:
    """The map's cost against its run's budget: each item's estimate is held before it is
    submitted (the map suspends with ``BudgetExceeded`` instead of passing the budget), held
    items keep at least what they really cost until the map ends, and the sum of what the items
    run by this attempt cost becomes the attempt's journaled cost, so the run's total and budget
    count every item once (items replayed from the journal were counted by the attempt that ran
    them; one whose attempt was killed before it journaled is counted in its child run only)."""

    def __init__(self, ctx: RunContext, name: str, position: int, estimate: float) -> None:
        self.ctx, self.name, self.position, self.estimate = ctx, name, position, estimate
        self.held = 0  # micro-dollars reserved in the run's context for this map
        self.usd_micros = self.tokens = 0

    def hold(self, index: int) -> int:
        """Reserve one item's estimate, or suspend the run (``BudgetExceeded``)."""
        held = self.ctx.reserve(self.estimate, f"{self.name}[{index}]", self.position)
        self.held += held
        return held

    def spent(self, held: int, usd_micros: int, tokens: int) -> None:
        """An item run by this attempt finished (or failed) having cost this much."""
        self.usd_micros += usd_micros
        self.tokens += tokens
        extra = max(0, usd_micros - held)
        if extra and self.ctx.budget is not None:
            self.ctx.reserved_micros += extra  # counted against the budget until the map ends
            self.held += extra

    def close(self) -> None:
        from letitloop.kernel import _cost

        self.ctx.settle(self.held, None)
        self.held = 0
        current = _cost._current.get()
        if current is not None and (self.usd_micros or self.tokens):
            current["usd_micros"] += self.usd_micros  # the map step's cost: its items' sum
            current["in"] += self.tokens


def _tell_replayed(ctx: RunContext, name: str, replayed: int, total: int) -> None:
    """One line on stderr when a map resumes outside a notebook (where the progress display says
    it): how many items came back from the journal, so a re-attached run shows it did not start
    over. Shown always, like the note of a blocked ``approval()``; no logging set-up needed."""
    import sys

    sys.stderr.write(
        f"letitloop: step.map {name!r} of run {ctx.run_id}: {replayed} of {total} items "
        f"replayed from the journal, {total - replayed} submitted\n"
    )
    sys.stderr.flush()


def _current_position(ctx: RunContext) -> int:
    from letitloop.kernel._context import current_step_var

    held = current_step_var.get()
    return int(held[1]) if held is not None else ctx.next_position


def _location(journal: Journal) -> str:
    location = getattr(journal, "location", None)
    if not isinstance(location, str) or location.startswith(":memory:"):
        raise ConfigError(
            "step.map() on an executor in other processes needs a journal they can open",
            fix="use a DuckDB journal on this machine or a postgresql:// journal, or "
            "ThreadExecutor() with an in-memory journal",
        )
    return location


def _finished(ctx: RunContext, calls: list[ItemCall], results: list[Any]) -> list[int]:
    """Fill in the results of items whose child runs already completed (one read for them
    all); the rest, to run."""
    from letitloop.kernel._runtime import codec_for

    if not calls:
        return []
    codec = codec_for(ctx.journal)
    by_id = {c.run_id: i for i, c in enumerate(calls)}
    for run_id, encoded in ctx.journal.results(list(by_id)).items():
        if run_id in by_id:
            results[by_id.pop(run_id)] = codec.decode(*encoded, what=f"result of {run_id}")
    return sorted(by_id.values())


def _submit_all(
    executor: Executor,
    calls: list[ItemCall],
    todo: list[int],
    results: list[Any],
    window: int,
    update: Callable[[int, int, int], None],
    ledger: _Ledger,
) -> None:
    """Keep up to ``window`` items in flight, submitted in batches; collect each as it settles
    (a completion queue: no scan of every pending future per finished item)."""
    from letitloop.distributed._executor import submit_many

    pending: dict[Future[Any], tuple[int, int]] = {}
    settled: SimpleQueue[Future[Any]] = SimpleQueue()
    queue = list(reversed(todo))
    failures: dict[int, BaseException] = {}
    stopped: BudgetExceeded | None = None
    done = 0
    while queue or pending:
        batch: list[tuple[int, int]] = []
        while queue and len(pending) + len(batch) < window and stopped is None:
            i = queue[-1]
            try:
                held = ledger.hold(i)
            except BudgetExceeded as over:
                stopped = over  # nothing new starts; the items in flight finish and count
                queue.clear()
                break
            queue.pop()
            batch.append((i, held))
        if batch:
            futures = submit_many(executor, [calls[i] for i, _ in batch])
            for fut, entry in zip(futures, batch, strict=True):
                pending[fut] = entry
                fut.add_done_callback(settled.put)
        if not pending:
            break
        try:
            finished = [settled.get(timeout=1.0)]
        except Empty:
            continue
        while True:
            try:
                finished.append(settled.get_nowait())
            except Empty:
                break
        for fut in finished:
            i, held = pending.pop(fut)
            exc = fut.exception()
            if exc is not None:
                failures[i] = exc
                queue.clear()  # nothing new starts; items in flight still land in the journal
                ledger.spent(held, 0, 0)
            else:
                outcome = fut.result()
                results[i] = outcome.value
                ledger.spent(held, outcome.usd_micros, outcome.tokens)
                done += 1
        update(done, len(pending), len(failures))
    if stopped is not None and not failures:
        raise stopped
    if failures:
        first = min(failures)
        exc = failures[first]
        finished_items = len(calls) - len(todo) + done
        raise MapItemError(
            f"item {first} of step.map {calls[first].name!r} failed "
            f"({len(failures)} of {len(calls)} items failed): {type(exc).__name__}: {exc}",
            fix=f"fix the cause and call the workflow again: the {finished_items} finished "
            "items replay from the journal and only the others run "
            f"(child run {calls[first].run_id})",
            run_id=calls[first].parent,
            step=calls[first].name,
        ) from exc
