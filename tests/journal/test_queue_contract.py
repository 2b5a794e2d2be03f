"""The ``QueueJournal`` role, one suite for the three backends (memory, the DuckDB owner,
PostgreSQL): enqueue and dedup, claim order and priority, pause, fleet-wide and per-worker
concurrency, the start-rate limit, finishing and releasing, a worker that leaves or lapses.

Two journal objects over one store are two processes, as in tests/journal/test_contract.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from letitloop.errors import ConfigError, JournalError
from letitloop.journal import QueueItem, QueueSpec, WorkerInfo
from tests.helpers import wait_until
from tests.journal.test_contract import backend

__all__ = ["backend"]  # the contract suite's fixture, used by name


def item(run: str, queue: str = "q", priority: int = 0) -> QueueItem:
    return QueueItem(run, queue, "wf", run, priority, "queued", time.time(), entry="e", args=None)


def worker(name: str, ttl: float = 30.0, queues: tuple[str, ...] = ()) -> WorkerInfo:
    now = time.time()
    return WorkerInfo(f"{name}@host/{name}", "host", 1, queues, 4, now, now, ttl, "running")


def test_enqueue_dedups_and_claims_oldest_first(backend: Any) -> None:
    j = backend()
    spec = QueueSpec("q")
    assert j.enqueue(spec, item("a")) is True
    time.sleep(0.01)
    assert j.enqueue(spec, item("b")) is True
    assert j.enqueue(spec, item("a")) is False  # the same run again: queued once
    [info] = j.queues()
    assert (info.spec.name, info.queued, info.claimed, info.paused) == ("q", 2, 0, False)
    assert info.oldest is not None and info.oldest <= time.time()
    got = j.claim(worker("w1"), 1)
    assert [i.run_id for i in got] == ["a"] and got[0].state == "claimed" and got[0].claims == 1
    assert got[0].entry == "e"
    assert j.queue_item("a").claimed_by == "w1@host/w1"
    assert [w.runs for w in j.workers()] == [("a",)]
    assert j.finish_item("w1@host/w1", "a", "completed") is True
    assert j.finish_item("w1@host/w1", "a", "completed") is False  # no longer held
    done = j.queue_item("a")
    assert (done.state, done.outcome) == ("finished", "completed")
    assert [i.run_id for i in j.claim(worker("w1"), 5)] == ["b"]


def test_priority_queue_orders_by_priority_then_age(backend: Any) -> None:
    j = backend()
    spec = QueueSpec("p", priority=True)
    for run, prio in (("low", 5), ("high", -1), ("mid", 0)):
        j.enqueue(spec, item(run, "p", prio))
        time.sleep(0.005)
    assert [i.run_id for i in j.claim(worker("w"), 3)] == ["high", "mid", "low"]


def test_pause_stops_claims_until_resumed(backend: Any) -> None:
    j = backend()
    j.enqueue(QueueSpec("q"), item("a"))
    j.pause_queue("q", True)
    assert j.queues()[0].paused is True
    assert j.claim(worker("w"), 1) == []
    j.pause_queue("q", False)
    assert [i.run_id for i in j.claim(worker("w"), 1)] == ["a"]
    with pytest.raises(JournalError, match="no queue 'nope'"):
        j.pause_queue("nope", True)


def test_concurrency_fleet_wide_and_per_worker(backend: Any) -> None:
    a, b = backend(), backend()
    spec = QueueSpec("c", concurrency=3, per_worker=2)
    for n in range(6):
        a.enqueue(spec, item(f"r{n}", "c"))
    first = a.claim(worker("w1"), 5)
    assert len(first) == 2  # per worker
    second = b.claim(worker("w2"), 5)
    assert len(second) == 1  # fleet-wide: 3 at once
    assert b.claim(worker("w3"), 5) == []
    b.finish_item("w2@host/w2", second[0].run_id, "failed")
    assert len(b.claim(worker("w3"), 5)) == 1


def test_start_rate_limit(backend: Any) -> None:
    j = backend()
    spec = QueueSpec("r", limit=2, period=0.6)
    for n in range(4):
        j.enqueue(spec, item(f"r{n}", "r"))
    assert len(j.claim(worker("w"), 4)) == 2
    assert j.claim(worker("w"), 4) == []
    time.sleep(0.8)
    assert len(j.claim(worker("w"), 4)) == 2


def test_release_and_leave_give_runs_back(backend: Any) -> None:
    a, b = backend(), backend()
    spec = QueueSpec("q")
    for run in ("x", "y"):
        a.enqueue(spec, item(run))
    assert len(a.claim(worker("w1"), 2)) == 2
    assert a.finish_item("w1@host/w1", "x", "released") is True
    assert a.queue_item("x").state == "queued"
    a.leave_worker("w1@host/w1")
    assert {i.run_id for i in b.claim(worker("w2"), 5)} == {"x", "y"}
    assert b.queue_item("y").claims == 2  # taken over: claimed a second time


def test_a_lapsed_workers_runs_are_taken_over(backend: Any) -> None:
    a, b = backend(), backend()
    a.enqueue(QueueSpec("q"), item("z"))
    assert len(a.claim(worker("slow", ttl=0.5), 1)) == 1
    assert b.claim(worker("fast"), 1) == []  # held by a live worker
    time.sleep(0.2)
    taken = wait_until(lambda: b.claim(worker("fast"), 1), 10, what="z taken over", interval=0.2)
    assert [i.run_id for i in taken] == ["z"]
    assert a.beat_worker(worker("slow", ttl=0.5)._replace(runs=("z",))) == ["z"]  # it lost z
    states = {w.worker.split("@")[0]: w for w in b.workers()}
    assert states["fast"].runs == ("z",)


def test_a_run_the_worker_just_finished_is_not_reported_taken_over(backend: Any) -> None:
    # the heartbeat says which runs the worker holds; one may finish before the beat arrives:
    # `lil worker` logged it as "taken over by another worker (this one lapsed)"
    j = backend()
    j.enqueue(QueueSpec("q"), item("x"))
    j.enqueue(QueueSpec("q"), item("y"))
    assert len(j.claim(worker("w"), 2)) == 2
    assert j.finish_item("w@host/w", "x", "completed") is True
    assert j.beat_worker(worker("w")._replace(runs=("x", "y"))) == []
    assert j.finish_item("w@host/w", "y", "released") is True  # given back: no longer its own
    assert j.beat_worker(worker("w")._replace(runs=("y",))) == ["y"]
    assert j.beat_worker(worker("w")) == []  # an idle worker's beat


def test_bad_specs_are_refused_plainly(backend: Any) -> None:
    j = backend()
    with pytest.raises(ConfigError, match="concurrency=0"):
        j.enqueue(QueueSpec("q", concurrency=0), item("a"))
    with pytest.raises(ConfigError, match="a queue's name"):
        j.enqueue(QueueSpec("bad\nname"), item("a"))
    assert j.queue_items() == []


def _hold(j: Any, run: str, spec: QueueSpec, declare: bool = False) -> None:
    """What a recoverable call does: lease the run, then hold its item (kernel._recover)."""
    j.open_run(run_id=run, workflow="wf", key=run, lease=True)
    j.hold(spec, item(run, spec.name)._replace(state="held"), declare=declare)


def _claim_within(j: Any, w: WorkerInfo, seconds: float) -> list[QueueItem]:
    deadline = time.monotonic() + seconds
    taken: list[QueueItem] = j.claim(w, 5)
    while not taken and time.monotonic() < deadline:
        time.sleep(0.05)
        taken = j.claim(w, 5)
    return taken


def test_a_held_run_is_taken_over_only_once_its_process_is_gone(backend: Any) -> None:
    a, b = backend(), backend()
    _hold(a, "wf:h", QueueSpec("q"))
    assert b.claim(worker("w"), 5) == []  # its process holds it: no worker takes it
    [info] = b.queues()
    assert (info.queued, info.claimed, info.held) == (0, 0, 1)
    held = b.queue_item("wf:h")
    assert held.state == "held" and held.claims == 1 and held.claimed_by is not None
    a.close()  # the process is gone (its connections closed, its lease with them)
    [taken] = _claim_within(b, worker("w"), 15)
    assert (taken.run_id, taken.state, taken.claims) == ("wf:h", "claimed", 2)


def test_a_held_run_its_process_ends_is_finished_with_its_outcome(backend: Any) -> None:
    a, b = backend(), backend()
    _hold(a, "wf:done", QueueSpec("q"))
    a.unhold("wf:done", "completed")
    done = b.queue_item("wf:done")
    assert (done.state, done.outcome) == ("finished", "completed")
    a.close()
    time.sleep(0.3)
    assert b.claim(worker("w"), 5) == []  # finished: nothing to take over


def test_a_held_run_keeps_its_queues_limits_unless_declared(backend: Any) -> None:
    a = backend()
    a.enqueue(QueueSpec("q", concurrency=3), item("first"))
    _hold(a, "wf:1", QueueSpec("q"))  # a name alone: the queue keeps its limits
    assert {q.spec.name: q.spec.concurrency for q in a.queues()} == {"q": 3}
    _hold(a, "wf:2", QueueSpec("q", concurrency=5), declare=True)  # recover=Queue(...)
    assert {q.spec.name: q.spec.concurrency for q in a.queues()} == {"q": 5}
    _hold(a, "wf:3", QueueSpec("fresh"))  # a missing queue is created
    assert "fresh" in {q.spec.name for q in a.queues()}


def test_a_run_taken_back_by_its_caller_is_held_again(backend: Any) -> None:
    a, b = backend(), backend()
    a.enqueue(QueueSpec("q"), item("wf:back"))  # e.g. an orphan waiting for a worker
    _hold(b, "wf:back", QueueSpec("q"))  # its caller called it again first
    assert a.claim(worker("w"), 5) == []
    assert a.queue_item("wf:back").state == "held"
