"""fork_run on real journals: a fork from step k runs exactly the steps from k on, reuses the
journaled outputs before k, records where it came from, and leaves the source untouched."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from letitloop import atomic_marker, durable, fork_run, run_fork, step
from letitloop.errors import ConfigError, NonDeterminismError, RunLockedError
from letitloop.journal._fork import ForkOrigin, forked_from


def _pipeline(journal: Any, calls: list[int], steps: int = 5) -> Any:
    def work(i: int, n: int) -> str:
        calls.append(i)
        return f"{i}-{n}-{uuid.uuid4().hex[:8]}"  # a fresh value each time it really runs

    @durable(journal=journal)
    def pipeline(n: int) -> list[str]:
        return [step(f"s{i}", work, i, n) for i in range(steps)]

    return pipeline


def _snapshot(journal: Any, run_id: str) -> tuple[Any, ...]:
    detail = journal.get_run(run_id)
    events = [(e.kind, e.position, e.attempt) for e in journal.events(run_id=run_id)]
    attempts = [(a.position, a.attempt, a.status, a.preview) for a in detail.attempts]
    info = detail.run
    return info.status, info.epoch, info.attempt, detail.result, attempts, events


def test_fork_runs_exactly_the_steps_from_k_on(any_journal: Any) -> None:
    calls: list[int] = []
    pipeline = _pipeline(any_journal, calls)
    source = pipeline(1)
    assert calls == [0, 1, 2, 3, 4]
    source_id = any_journal.list_runs()[0].run_id
    before = _snapshot(any_journal, source_id)

    calls.clear()
    fork = fork_run(source_id, from_step=2, journal=any_journal)
    assert calls == []  # forking runs nothing
    assert fork.run_id != source_id and fork.reused == 2
    assert not fork.resumable  # defined inside a function: it runs with fork.run(pipeline)
    assert fork.origin == ForkOrigin(source_id, 2, 0, "s2")
    assert forked_from(any_journal, fork.run_id) == fork.origin
    waiting = any_journal.get_run(fork.run_id).run
    assert waiting.status == "suspended" and waiting.steps_done == 2
    assert "forked from" in waiting.error["message"]

    result = fork.run(pipeline)
    assert calls == [2, 3, 4]  # exactly the steps from k on
    assert result[:2] == source[:2]  # the journaled outputs before k, not new ones
    assert all(a != b for a, b in zip(result[2:], source[2:], strict=True))
    assert any_journal.get_run(fork.run_id).run.status == "completed"
    assert _snapshot(any_journal, source_id) == before  # the original is untouched
    assert pipeline(1) == source  # and calling the workflow still returns the original's result

    calls.clear()
    assert run_fork(fork.run_id, pipeline, journal=any_journal) == result  # done: journaled
    assert calls == []


def test_fork_by_name_with_new_arguments(any_journal: Any) -> None:
    calls: list[int] = []
    pipeline = _pipeline(any_journal, calls)
    source = pipeline(1)
    source_id = any_journal.list_runs()[0].run_id
    calls.clear()
    fork = fork_run(source_id, "s3", args=[9], journal=any_journal)
    assert fork.origin.position == 3 and fork.origin.step == "s3"
    result = fork.run(pipeline)
    assert calls == [3, 4]
    assert result[:3] == source[:3]  # reused although the new argument changes their input
    assert result[3].startswith("3-9-") and result[4].startswith("4-9-")
    # a fork of the fork, from its first step: everything runs again, with the fork's arguments
    calls.clear()
    again = fork_run(fork.run_id, 0, journal=any_journal)
    assert forked_from(any_journal, again.run_id) == ForkOrigin(fork.run_id, 0, 0, "s0")
    assert [r.split("-")[1] for r in again.run(pipeline)] == ["9"] * 5
    assert calls == [0, 1, 2, 3, 4]


def test_fork_of_an_interrupted_run_continues_from_k(any_journal: Any) -> None:
    calls: list[int] = []
    boom = {"at": 3}

    def work(i: int) -> int:
        if i == boom["at"]:
            raise RuntimeError("the model timed out")
        calls.append(i)
        return i * 10

    @durable(journal=any_journal)
    def flaky() -> list[int]:
        return [step(f"s{i}", work, i) for i in range(5)]

    with pytest.raises(RuntimeError):
        flaky()
    source_id = any_journal.list_runs()[0].run_id
    with pytest.raises(ConfigError, match="failed"):
        fork_run(source_id, 4, journal=any_journal)  # s3 failed: nothing to reuse past it
    boom["at"] = -1
    calls.clear()
    fork = fork_run(source_id, 3, journal=any_journal)
    assert fork.run(flaky) == [0, 10, 20, 30, 40]
    assert calls == [3, 4]
    assert any_journal.get_run(source_id).run.status == "failed"  # the source stays failed


def test_markers_before_k_are_not_repeated(any_journal: Any) -> None:
    sent: list[str] = []
    calls: list[str] = []

    @durable(journal=any_journal)
    def notify(user: str) -> str:
        text = step("draft", lambda u: calls.append("draft") or f"hi {u}", user)
        with atomic_marker("send") as go:
            if go:
                sent.append(text)
        return step("log", lambda t: calls.append("log") or f"logged {t}", text)

    notify("ada")
    source_id = any_journal.list_runs()[0].run_id
    calls.clear()
    fork = fork_run(source_id, "log", journal=any_journal)
    assert fork.run(notify) == "logged hi ada"
    assert sent == ["hi ada"]  # the side effect before k happened once, in the original
    assert calls == ["log"]


def test_forking_a_running_run_is_refused(any_journal: Any) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(i: int) -> int:
        if i == 2:
            started.set()
            assert release.wait(60)
        return i

    @durable(journal=any_journal)
    def busy() -> list[int]:
        return [step(f"s{i}", slow, i) for i in range(3)]

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        assert started.wait(60)
        source_id = any_journal.list_runs()[0].run_id
        with pytest.raises(RunLockedError, match="being executed") as err:
            fork_run(source_id, 1, journal=any_journal)
        assert "fork again" in (err.value.fix or "")
        assert len(any_journal.list_runs()) == 1  # nothing was written
    finally:
        release.set()
        worker.join(60)
    assert fork_run(source_id, 1, journal=any_journal).reused == 1  # once it is done: fine


def test_bad_fork_points_say_what_exists(any_journal: Any) -> None:
    calls: list[int] = []
    pipeline = _pipeline(any_journal, calls, steps=3)
    pipeline(1)
    source_id = any_journal.list_runs()[0].run_id
    with pytest.raises(ConfigError, match=r"no step named 'nope'.*s0, s1, s2"):
        fork_run(source_id, "nope", journal=any_journal)
    with pytest.raises(ConfigError, match="positions 0 to 2"):
        fork_run(source_id, 7, journal=any_journal)
    assert fork_run(source_id, 3, journal=any_journal).reused == 3  # after the last: all reused
    named = fork_run(source_id, 1, key="try-2", journal=any_journal)
    assert named.run_id.endswith("~try-2")  # the source key, "~" and the label
    with pytest.raises(ConfigError, match="already exists"):
        fork_run(source_id, 1, key="try-2", journal=any_journal)


def test_a_changed_step_name_before_k_is_still_caught(any_journal: Any) -> None:
    names = ["a", "b", "c"]

    @durable(journal=any_journal)
    def wf() -> list[int]:
        return [step(name, lambda i: i, i) for i, name in enumerate(names)]

    wf()
    fork = fork_run(any_journal.list_runs()[0].run_id, 2, journal=any_journal)
    names[1] = "renamed"
    with pytest.raises(NonDeterminismError, match="renamed"):
        fork.run(wf)


def test_an_async_workflow_forks_too(any_journal: Any) -> None:
    import asyncio

    from letitloop import async_step, durable_async

    calls: list[int] = []

    async def work(i: int) -> str:
        calls.append(i)
        await asyncio.sleep(0)
        return f"{i}-{uuid.uuid4().hex[:8]}"

    @durable_async(journal=any_journal)
    async def fan() -> list[str]:
        first = await async_step("first", work, 0)
        rest = await asyncio.gather(*(async_step(f"item{i}", work, i) for i in (1, 2, 3)))
        return [first, *rest, await async_step("last", work, 4)]

    source = asyncio.run(fan())
    calls.clear()
    fork = fork_run(any_journal.list_runs()[0].run_id, "last", journal=any_journal)
    assert fork.reused == 4
    result = fork.run(fan)
    assert calls == [4] and result[:4] == source[:4] and result[4] != source[4]
