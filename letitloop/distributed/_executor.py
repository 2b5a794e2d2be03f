"""The executor protocol behind ``step.map``, and the thread executor (tests, one process).

An executor runs zero-argument calls and hands back ``concurrent.futures.Future`` objects. It
need not be durable: each call journals its own item, and ``step.map`` resubmits whatever the
journal does not show finished. ``in_process`` tells ``step.map`` whether a call may carry the
journal object itself (threads) or must carry the journal's location (other processes).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Executor(Protocol):
    """Where ``step.map`` runs its items."""

    in_process: bool

    def submit(self, call: Callable[[], Any]) -> Future[Any]:
        """Start ``call()`` somewhere; the future holds its result or its exception."""
        ...

    def close(self) -> None:
        """Release what the executor started (threads, a local cluster); idempotent."""
        ...


def submit_many(executor: Executor, calls: list[Callable[[], Any]]) -> list[Future[Any]]:
    """Start every call, in one batch where the executor has one (``submit_many``: Dask sends a
    batch to the scheduler in one message), else one ``submit`` each."""
    batch = getattr(executor, "submit_many", None)
    if callable(batch):
        futures: list[Future[Any]] = batch(calls)
        return futures
    return [executor.submit(call) for call in calls]


class ThreadExecutor:
    """Run items on a pool of threads in this process (any journal, the in-memory one too)."""

    in_process = True

    def __init__(self, max_workers: int = 8) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="lil-map")

    def submit(self, call: Callable[[], Any]) -> Future[Any]:
        return self._pool.submit(call)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> ThreadExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
