"""Recoverable runs in one process, on the memory journal (fast): what ``@durable(recover=...)``
and ``workflow.start`` hold, how a held run ends, what a worker does with one whose process is
gone, and what stays an orphan. Two ``MemoryJournal`` objects over one store are two processes;
closing one is its process dying. The real-process chaos is tests/queues/test_orphan_takeover.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from letitloop import Queue, atomic_marker, durable, step
from letitloop.errors import ConfigError
from letitloop.journal import MemoryJournal, QueueItem, QueueSpec
from letitloop.journal._memory import MemoryStore
from letitloop.kernel import Worker, WorkerOptions, current_run

SEEN: list[tuple[str, str | None]] = []  # (run, its item's state while it ran)
CRASH: set[int] = set()  # the calls that "die" (SystemExit) the first time
NOW: list[MemoryJournal] = []  # the journal of the process that executes runs right now


class _Now:
    """The workflows' journal: the caller's while it calls, the worker's once it died (each
    ``MemoryJournal`` over one store is one process)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(NOW[0], name)


@pytest.fixture
def journals() -> Iterator[tuple[MemoryJournal, MemoryJournal]]:
    """The caller's process and a worker's, sharing one store."""
    SEEN.clear()
    CRASH.clear()
    store = MemoryStore()
    caller, worker = MemoryJournal(store), MemoryJournal(store)
    NOW[:] = [caller]
    yield caller, worker
    worker.close()


def _body(n: int) -> int:
    run = current_run.get()
    assert run is not None
    item = run.journal.queue_item(run.run_id)
    SEEN.append((run.run_id, item.state if item is not None else None))
    if n in CRASH:
        CRASH.discard(n)
        raise SystemExit(1)  # the process ends mid-run: the run is interrupted, not failed
    if n < 0:
        raise ValueError("bad input")
    return step("double", lambda v: v * 2, n)


@durable(recover=True, journal=_Now())  # type: ignore[arg-type]
def recoverable(n: int) -> int:
    return _body(n)


@durable(recover=Queue("emb", concurrency=2), journal=_Now())  # type: ignore[arg-type]
def limited(n: int) -> int:
    return _body(n)


@durable(journal=_Now())  # type: ignore[arg-type]
def plain(n: int) -> int:
    return _body(n)


CHARGED: list[int] = []  # the side effect, each time it is applied


@durable(recover=True, journal=_Now())  # type: ignore[arg-type]
def charge(n: int) -> str:
    with atomic_marker("charge") as go:  # no reconcile: a marker in doubt stops the run
        if go:
            CHARGED.append(n)
            if n in CRASH:
                CRASH.discard(n)
                raise SystemExit(1)  # the process dies inside the side effect
    return "charged"


def _worker(journal: MemoryJournal) -> Worker:
    NOW[:] = [journal]  # the runs it takes execute in the worker's process
    return Worker(journal, WorkerOptions(until_empty=True, quiet=True, ttl=5.0))


def test_a_bad_recover_value_is_refused_when_declared() -> None:
    with pytest.raises(ConfigError, match="recover=3 must be True") as info:
        durable(recover=3)(lambda: None)
    assert "recover=True" in (info.value.fix or "")
    with pytest.raises(ConfigError, match="a queue's name"):
        durable(recover="bad\nname")(lambda: None)


def test_a_recoverable_call_is_held_while_it_runs_and_finished_with_its_outcome(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    caller, _ = journals
    assert recoverable(2) == 4
    assert plain(3) == 6
    with pytest.raises(ValueError):
        recoverable(-1)
    states = dict(SEEN)
    ok, bad = (r for r, _ in SEEN if r.startswith("tests.queues.test_recover.recoverable"))
    assert states[ok] == "held" and states[bad] == "held"  # held while it ran
    assert [s for r, s in SEEN if ".plain:" in r] == [None]  # a plain call holds nothing
    assert (caller.queue_item(ok).state, caller.queue_item(ok).outcome) == ("finished", "completed")
    assert caller.queue_item(bad).outcome == "failed"
    assert caller.queue_item(ok).queue == "default"


def test_a_queue_given_as_recover_declares_its_limits(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    caller, _ = journals
    assert limited(1) == 2
    assert {q.spec.name: q.spec.concurrency for q in caller.queues()} == {"emb": 2}


def test_a_held_run_whose_process_died_is_taken_over_by_a_worker(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    caller, other = journals
    CRASH.add(5)
    with pytest.raises(SystemExit):
        recoverable(5)
    [item] = caller.queue_items()
    assert item.state == "held"  # the process ends: nothing finished the item
    assert _worker(other).run() == 0 and other.queue_items() == [item]  # its process lives on
    caller.close()  # now it is gone
    worker = _worker(other)
    worker.run()
    done = other.queue_item(item.run_id)
    assert (done.state, done.outcome, done.claims) == ("finished", "completed", 2)
    assert worker.counts == {"completed": 1}
    assert other.results([item.run_id]) != {}


def test_a_started_run_is_recoverable_on_the_default_queue(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    caller, _ = journals
    assert plain.start(4).result(timeout=30) == 8  # type: ignore[attr-defined]
    [(run, state)] = SEEN
    assert state == "held" and caller.queue_item(run).outcome == "completed"


def test_a_worker_does_not_take_over_a_run_cancelled_since(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    from letitloop.operate import cancel_run

    caller, other = journals
    CRASH.add(6)
    with pytest.raises(SystemExit):
        recoverable(6)
    [item] = caller.queue_items()
    caller.close()
    cancel_run(other, item.run_id, by="test")
    worker = _worker(other)
    worker.run()
    assert worker.counts == {"cancelled": 1}
    assert other.queue_item(item.run_id).outcome == "cancelled"
    assert len(SEEN) == 1  # the workflow never ran again


def test_a_plain_call_whose_process_died_is_an_orphan_with_its_command(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    from letitloop.operate import orphan_summaries

    caller, other = journals
    CRASH.update({7, 8})
    for fn, n in ((plain, 7), (recoverable, 8)):
        with pytest.raises(SystemExit):
            fn(n)
    caller.close()
    [orphan] = orphan_summaries(other)  # the recoverable one is on its queue, not an orphan
    assert orphan.workflow == "tests.queues.test_recover.plain" and orphan.resumable
    assert orphan.command == f"lil runs resume {orphan.run_id}"
    _worker(other).run()
    assert [o.run_id for o in orphan_summaries(other)] == [orphan.run_id]  # never taken


def test_a_worker_that_cannot_get_the_runs_lease_gives_the_item_back(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    caller, other = journals
    run = "tests.queues.test_recover.plain:busy"
    caller.open_run(run_id=run, workflow="tests.queues.test_recover.plain", key="busy")
    from letitloop.kernel import codec_for
    from letitloop.kernel._entry import sign_entry

    codec = codec_for(other)
    args = codec.encode([[1], {}], what="arguments")
    entry = sign_entry(codec, run, "tests.queues.test_recover.plain", _entry(), args)
    item = QueueItem(run, "q", "tests.queues.test_recover.plain", "busy", 0, "queued", 0.0)
    other.enqueue(QueueSpec("q"), item._replace(entry=entry, args=args))
    w = Worker(other, WorkerOptions(quiet=True, ttl=0.2))  # waits 0.4 s for the lease
    [claimed] = other.claim(w.info(), 1)
    w.in_hand[claimed.run_id] = 0.0
    w._one(claimed)
    assert w.counts == {"lost": 1}
    assert other.queue_item(run).state == "queued"  # back: the next claim tries again


def _entry() -> str:
    return "tests.queues.test_recover:plain"


def test_a_taken_over_run_whose_marker_is_in_doubt_stops_for_a_person(
    journals: tuple[MemoryJournal, MemoryJournal],
) -> None:
    caller, other = journals
    CHARGED.clear()
    CRASH.add(3)
    with pytest.raises(SystemExit):
        charge(3)
    [item] = caller.queue_items()
    caller.close()
    worker = _worker(other)
    worker.run()
    assert worker.counts == {"stopped": 1}  # taken over, and stopped at the marker in doubt
    assert other.queue_item(item.run_id).outcome == "stopped"
    assert CHARGED == [3]  # never applied a second time
    assert other.results([item.run_id]) == {}
