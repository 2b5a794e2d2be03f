"""Queued runs: ``Queue(...).enqueue(workflow, *args)`` and ``workflow.start(*args)``, and the
handle both return (``result(timeout=)``, ``status()``).

A queued run is journaled with its entry point and arguments signed by the journal's key (the
same signature ``lil runs resume`` checks, ``kernel._entry``), so a worker on any machine that
reaches the journal imports only what an enqueuer with the key asked for. The run's identity is
the one a call computes (the workflow and its arguments, or ``key=``): enqueueing the same call
twice queues one run, and its handle answers for both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from letitloop.errors import (
    ConfigError,
    ResultTimeoutError,
    RunFailedError,
)
from letitloop.journal import (
    Journal,
    QueueItem,
    QueueSpec,
    cancelled_error,
    check_spec,
    check_text,
)
from letitloop.kernel._entry import sign_entry
from letitloop.kernel._frozen import replace
from letitloop.kernel._runtime import (
    _entry_point,
    _Invocation,
    codec_for,
    resolve_journal,
    run_again,
)

if TYPE_CHECKING:
    from letitloop.kernel._options import JournalSpec


class RunHandle:
    """A run that executes elsewhere (a worker) or in the background of this process."""

    def __init__(self, journal: Journal, run_id: str, future: Future[Any] | None = None) -> None:
        self.journal = journal
        self.run_id = run_id
        self._future = future
        self.new = True  # False when enqueue found the run queued already (dedup)

    def __repr__(self) -> str:
        return f"<RunHandle {self.run_id} {self.status()}>"

    def status(self) -> str:
        """``queued`` (waiting for a worker), ``claimed`` (a worker took it and has not started
        it yet), or the run's status: running, suspended, completed, failed, cancelled."""
        item = self.journal.queue_item(self.run_id)
        if item is not None and item.state == "queued":
            return "queued"
        try:
            info = self.journal.get_run(self.run_id).run
        except Exception:  # no run yet (a worker claimed it and has not opened it)
            return "claimed" if item is not None else "unknown"
        return info.status

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the run's result (polling the journal, cheap reads) and return it; raise
        ``RunFailedError`` if it failed, ``ResultTimeoutError`` after ``timeout`` seconds."""
        if self._future is not None:
            try:
                return self._future.result(timeout)
            except TimeoutError:
                raise self._late(timeout) from None
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.005
        while True:
            found = self.journal.results([self.run_id])
            if self.run_id in found:
                return codec_for(self.journal).decode(
                    *found[self.run_id], what=f"result of run {self.run_id}"
                )
            self._raise_if_failed()
            if deadline is not None and time.monotonic() >= deadline:
                raise self._late(timeout)
            left = 0.2 if deadline is None else max(0.0, deadline - time.monotonic())
            time.sleep(min(pause, left))
            pause = min(pause * 1.5, 0.2)

    def _raise_if_failed(self) -> None:
        item = self.journal.queue_item(self.run_id)
        if item is not None and item.state != "finished":
            return
        try:
            info = self.journal.get_run(self.run_id).run
        except Exception:
            info = None
        if info is None or info.status not in ("cancelled", "failed"):
            if item is not None and item.outcome not in (None, "completed", "suspended"):
                raise RunFailedError(  # the worker could not run it (see the worker's log)
                    f"run {self.run_id} was {item.outcome} by its worker "
                    f"{(item.claimed_by or '?').split('/', 1)[0]}",
                    fix="see the worker's log (a workflow that cannot be imported there, an "
                    "entry point refused, a side effect in doubt: `lil effects list`)",
                    run_id=self.run_id,
                )
            return
        if info.status == "cancelled":
            raise cancelled_error(self.run_id, info.error)
        if info.status == "failed":
            err = info.error or {}
            raise RunFailedError(
                f"run {self.run_id} failed: {err.get('type', 'error')}: {err.get('message', '')}",
                fix=f"see `lil runs show {self.run_id}`; once fixed, `lil runs resume "
                f"{self.run_id}` or enqueue it again",
                run_id=self.run_id,
            )

    def _late(self, timeout: float | None) -> ResultTimeoutError:
        return ResultTimeoutError(
            f"run {self.run_id} had no result after {timeout:g} s (it is {self.status()})",
            fix="wait longer (result(timeout=...)), or look at it with "
            f"`lil runs show {self.run_id}`; `lil worker` executes queued runs",
            run_id=self.run_id,
        )


class Queue:
    """A named queue of runs that ``lil worker`` processes execute.

    ``concurrency``: runs of this queue executing at once across every worker; ``per_worker``:
    on one worker; ``limit``: runs started per minute, or ``(n, seconds)``; ``priority=True``
    orders by the ``priority=`` each enqueue gives (lower first), then by age.
    """

    def __init__(
        self,
        name: str,
        *,
        concurrency: int | None = None,
        per_worker: int | None = None,
        limit: int | tuple[int, float] | None = None,
        priority: bool = False,
        journal: JournalSpec = None,
    ) -> None:
        n: int | None
        if isinstance(limit, tuple):
            if len(limit) != 2:
                raise ConfigError(
                    f"queue {name!r}: limit={limit!r} must be a number of runs or (runs, seconds)",
                    fix="pass limit=(50, 60) for at most 50 runs started a minute",
                )
            n, period = limit[0], float(limit[1])
        else:
            n, period = limit, 60.0
        self.spec = check_spec(QueueSpec(name, concurrency, per_worker, n, period, priority))
        self._journal = journal

    @property
    def name(self) -> str:
        return self.spec.name

    def __repr__(self) -> str:
        return f"Queue({self.spec.name!r})"

    def enqueue(
        self,
        workflow: Callable[..., Any],
        *args: Any,
        key: str | None = None,
        priority: int = 0,
        **kwargs: Any,
    ) -> RunHandle:
        """Queue a call of the durable ``workflow``; a worker runs it. ``key`` names the run
        (else its arguments do); the same run enqueued again is queued once (dedup)."""
        if type(priority) is not int or not -(2**31) < priority < 2**31:
            raise ConfigError(
                f"priority={priority!r} must be a whole number (lower runs first)",
                fix="pass priority=0 (the default), or a smaller number for more urgent runs",
            )
        inv, journal = _prepare(workflow, args, kwargs, self._journal, key)
        entry = _entry_point(inv.fn)
        if entry is None or inv.args is None:
            what = "its arguments cannot be journaled" if entry else "it cannot be imported"
            raise ConfigError(
                f"workflow {inv.workflow} cannot be queued: {what}, so no worker could run it",
                fix="define the workflow at the top level of a module (not inside a function, "
                "a notebook or `python -c`) and pass arguments the journal can encode",
                run_id=inv.run_id,
            )
        item = QueueItem(
            run_id=inv.run_id,
            queue=self.spec.name,
            workflow=inv.workflow,
            key=inv.key,
            priority=priority,
            state="queued",
            enqueued=time.time(),
            entry=sign_entry(inv.codec, inv.run_id, inv.workflow, entry, inv.args),
            args=inv.args,
        )
        handle = RunHandle(journal, inv.run_id)
        handle.new = journal.enqueue(self.spec, item)
        return handle


def _prepare(
    workflow: Callable[..., Any], args: Any, kwargs: Any, spec: JournalSpec, key: str | None
) -> tuple[_Invocation, Journal]:
    opts = getattr(workflow, "__letitloop_options__", None)
    inner = getattr(workflow, "__wrapped__", None)
    if opts is None or inner is None:
        raise ConfigError(
            f"{getattr(workflow, '__qualname__', workflow)!r} is not a @durable function",
            fix="decorate the workflow with @durable (or @durable_async) before queueing it",
        )
    if spec is not None:
        opts = replace(opts, journal=spec)
    inv = _Invocation(opts, inner, args, kwargs)
    if key is not None:
        check_text(key, "a run key", ConfigError)
        inv.key, inv.run_id = key, f"{inv.workflow}:{key}"
    return inv, inv.journal


def start(workflow: Callable[..., Any], args: Any, kwargs: Any) -> RunHandle:
    """``workflow.start(*args)``: run the durable call in a background thread of this process.
    The run is recoverable (``kernel._recover``): if this process dies first, a ``lil worker``
    of the workflow's recovery queue (else ``default``) takes it over."""
    opts = getattr(workflow, "__letitloop_options__", None)
    journal = resolve_journal(opts.journal if opts is not None else None)
    inv, _ = _prepare(workflow, args, kwargs, None, None)
    run_id, call = run_again(workflow, inv.workflow, args, kwargs, journal, recover=True)
    future: Future[Any] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(call())
        except BaseException as exc:  # handed to whoever waits on the handle
            future.set_exception(exc)

    threading.Thread(target=run, name=f"lil-start-{run_id}", daemon=True).start()
    return RunHandle(journal, run_id, future)
