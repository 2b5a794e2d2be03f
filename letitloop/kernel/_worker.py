"""``lil worker``: a process that claims queued runs and executes them, on any machine that
reaches the journal.

The worker heartbeats the journal every third of its TTL; it claims up to its free slots (queued
runs, and runs a lapsed worker held), executes each in a thread by its signed entry point (the
journal's key must authenticate it: nothing else is imported), and finishes the queue item with
the run's outcome. Idle, it sleeps in ``wait_for_work`` (LISTEN/NOTIFY on PostgreSQL). A drain
(SIGTERM) stops claiming, lets the runs in hand finish within ``grace`` seconds, then releases
what is left for other workers. A worker that dies frees its claims at once on DuckDB (its
connection closes) and after its TTL on PostgreSQL; a frozen one is fenced when it wakes.
Given ``slot_journal``, each run in hand executes on a journal of its own (on PostgreSQL a
connection of its own: one connection shared by the slots serialized their commits).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from letitloop.errors import (
    InDoubtError,
    LeaseLostError,
    LetItLoopError,
    RunCancelledError,
    RunLockedError,
    Suspended,
    TamperedDataError,
)
from letitloop.journal import Journal, QueueItem, WorkerInfo, worker_id
from letitloop.kernel._entry import verify_entry
from letitloop.kernel._resume import load_entry, takeover_refusal
from letitloop.kernel._runtime import codec_for, run_again


def default_ttl() -> float:
    """``LIL_LEASE_TTL`` (seconds, default 30): the same knob as PostgreSQL's run leases."""
    try:
        return max(0.2, float(os.environ.get("LIL_LEASE_TTL", "30")))
    except ValueError:
        return 30.0


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker runs: which queues, how many runs at once, its TTL and drain grace."""

    queues: tuple[str, ...] = ()  # empty: every queue of the journal
    concurrency: int = 4
    ttl: float = field(default_factory=default_ttl)
    grace: float = 30.0  # after a drain starts, seconds the runs in hand have to finish
    idle: float = 1.0  # seconds an idle worker waits for work before it asks again
    until_empty: bool = False  # exit once nothing is queued or claimed (batch jobs, tests)
    quiet: bool = False


Execute = Callable[[Journal, QueueItem], str]


def execute_item(journal: Journal, item: QueueItem, lock_timeout: float = 0.0) -> str:
    """Run a queued run in this thread by its authenticated entry point; return its outcome
    (completed, failed, cancelled, suspended, stopped) or ``lost`` (another process holds it).
    A takeover (the item was handed out before: a worker or the run's own process died) is
    first held to the rule every surface applies before resuming a run by name."""
    codec = codec_for(journal)
    if item.entry is None or item.args is None:
        return "stopped"
    entry = verify_entry(codec, item.run_id, item.workflow, item.entry, item.args)
    if item.claims > 1:
        refusal = takeover_refusal(journal, item.run_id)
        if isinstance(refusal, RunCancelledError):
            return "cancelled"
        if refusal is not None:
            raise refusal
    fn = load_entry(entry, item.run_id)
    decoded: Any = codec.decode(*item.args, what=f"arguments of run {item.run_id}")
    args, kwargs = decoded
    computed, call = run_again(
        fn, item.workflow, args, kwargs, journal, key=item.key, lock_timeout=lock_timeout,
        recover=False,
    )  # fmt: skip
    if computed != item.run_id:
        return "stopped"
    try:
        call()
    except (LeaseLostError, RunLockedError):
        return "lost"
    except RunCancelledError:
        return "cancelled"
    except Suspended:
        return "suspended"
    except InDoubtError:
        return "stopped"
    except Exception:
        return "failed"
    return "completed"


class Worker:
    """One worker process's loop; ``drain()`` (SIGTERM) ends it gracefully."""

    def __init__(
        self,
        journal: Journal,
        options: WorkerOptions,
        execute: Execute | None = None,
        slot_journal: Callable[[], Journal] | None = None,
    ) -> None:
        self.journal = journal
        self._open_slot = slot_journal  # opens a journal for one run at a time; None: share
        self._spare: list[Journal] = []  # slot journals no run uses now
        self.opts = options
        self.id = worker_id()
        self.started = time.time()
        self.in_hand: dict[str, float] = {}
        self.lock = threading.Condition()
        self.draining = threading.Event()
        self.stopped = threading.Event()
        self.counts: dict[str, int] = {}
        self._execute = execute or (
            lambda j, item: execute_item(j, item, lock_timeout=self.opts.ttl * 2)
        )

    def info(self) -> WorkerInfo:
        now = time.time()
        with self.lock:
            runs = tuple(sorted(self.in_hand))
        return WorkerInfo(
            worker=self.id,
            host=socket.gethostname(),
            pid=os.getpid(),
            queues=self.opts.queues,
            concurrency=self.opts.concurrency,
            started=self.started,
            heartbeat=now,
            ttl=self.opts.ttl,
            state="draining" if self.draining.is_set() else "running",
            runs=runs,
        )

    def say(self, text: str) -> None:
        if not self.opts.quiet:
            print(f"lil worker {self.id.split('/', 1)[0]}: {text}", file=sys.stderr, flush=True)

    def drain(self) -> None:
        """Stop claiming; the runs in hand finish within the grace period."""
        self.draining.set()
        with self.lock:
            self.lock.notify_all()

    def run(self) -> int:
        """Claim and execute until drained (or, with ``until_empty``, until nothing is left)."""
        beat = threading.Thread(target=self._heartbeat, name="lil-worker-beat", daemon=True)
        beat.start()
        pool = ThreadPoolExecutor(self.opts.concurrency, thread_name_prefix="lil-worker-run")
        queues = ", ".join(self.opts.queues) or "every queue"
        self.say(f"taking runs from {queues}, {self.opts.concurrency} at once")
        try:
            while not self.draining.is_set():
                with self.lock:
                    free = self.opts.concurrency - len(self.in_hand)
                if free <= 0:
                    with self.lock:
                        self.lock.wait(self.opts.ttl / 3)
                    continue
                items = self.journal.claim(self.info(), free)
                for item in items:
                    with self.lock:
                        self.in_hand[item.run_id] = time.monotonic()
                    pool.submit(self._one, item)
                if items:
                    continue
                if self.opts.until_empty and self._empty():
                    break
                self.journal.wait_for_work(self.opts.idle)
            self._finish_drain()
        finally:
            self.stopped.set()
            pool.shutdown(wait=False, cancel_futures=True)
            with self.lock:
                spare, self._spare = self._spare, []
            for j in spare:  # a run still executing past the grace period keeps its own
                j.close()
            try:
                self.journal.leave_worker(self.id)
            except LetItLoopError:
                pass
        return 0

    def _empty(self) -> bool:
        with self.lock:
            if self.in_hand:
                return False
        return not any(
            q.queued or q.claimed
            for q in self.journal.queues()
            if not self.opts.queues or q.spec.name in self.opts.queues
        )

    def _finish_drain(self) -> None:
        deadline = time.monotonic() + self.opts.grace
        with self.lock:
            if self.in_hand and self.draining.is_set():
                self.say(f"draining: {len(self.in_hand)} runs in hand, {self.opts.grace:g} s")
            while self.in_hand and time.monotonic() < deadline:
                self.lock.wait(max(0.0, deadline - time.monotonic()))
            left = list(self.in_hand)
        for run_id in left:  # still running after the grace period: others take them
            self.journal.finish_item(self.id, run_id, "released")
            self.say(f"released {run_id} (not finished within the grace period)")

    def _slot(self) -> Journal:
        """A journal for one run: a spare slot journal, a new one, or the worker's own."""
        if self._open_slot is None:
            return self.journal
        with self.lock:
            if self._spare:
                return self._spare.pop()
        try:
            return self._open_slot()
        except LetItLoopError as exc:  # the run still executes, on the worker's connection
            self.say(f"could not open a journal for one run ({exc}): sharing the worker's")
            return self.journal

    def _one(self, item: QueueItem) -> None:
        t0 = time.monotonic()
        journal = self._slot()
        try:
            outcome = self._execute(journal, item)
        except TamperedDataError as exc:
            self.say(f"refused {item.run_id}: {exc}")
            outcome = "stopped"
        except LetItLoopError as exc:
            self.say(f"could not start {item.run_id}: {exc}")
            outcome = "stopped"
        except Exception as exc:  # a bug of ours or the workflow's import: the item says so
            self.say(f"could not start {item.run_id}: {type(exc).__name__}: {exc}")
            outcome = "stopped"
        try:
            if outcome == "lost":  # the item goes back unless another holds it now
                self.journal.finish_item(self.id, item.run_id, "released")
                self.say(f"lost {item.run_id}: another process holds it now")
            elif not self.stopped.is_set() or outcome != "released":
                self.journal.finish_item(self.id, item.run_id, outcome)
                self.say(f"{outcome} {item.run_id} in {time.monotonic() - t0:.2f} s")
        except LetItLoopError as exc:
            self.say(f"could not finish {item.run_id}: {exc}")
        finally:
            with self.lock:
                if journal is not self.journal:
                    self._spare.append(journal)
                self.in_hand.pop(item.run_id, None)
                self.counts[outcome] = self.counts.get(outcome, 0) + 1
                self.lock.notify_all()

    def _heartbeat(self) -> None:
        period = max(0.05, self.opts.ttl / 3)
        while not self.stopped.wait(period):
            try:
                lost = self.journal.beat_worker(self.info())
            except LetItLoopError:
                continue  # the journal is away: the next claim or write reconnects
            for run_id in lost:
                self.say(f"{run_id} was taken over by another worker (this one lapsed)")
