"""Point 10 of issue 14: exactly-once holds inside one process too.

Two threads (or two asyncio tasks) of one process calling the same run at once used to share
the process's lease, and both entered the same ``atomic_marker``: the side effect ran twice.
The lease now belongs to one invocation; the second call gets ``RunLockedError``, or waits with
``lock_timeout=`` and then replays the completed effect instead of repeating it. On the real
owner (a real DuckDB file) and on the memory journal.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from letitloop import atomic_marker, durable, durable_async
from letitloop.errors import RunLockedError


@pytest.fixture(params=["owner", "memory"])
def any_journal(request: pytest.FixtureRequest, journal_path: Path) -> Any:
    if request.param == "memory":
        from letitloop.journal._memory import MemoryJournal

        return MemoryJournal()
    from letitloop.journal.duckdb._client import open_journal

    return open_journal(journal_path)


def _race(any_journal: Any, lock_timeout: float) -> tuple[list[str], list[BaseException]]:
    effects: list[str] = []
    inside, leave = threading.Event(), threading.Event()

    @durable(journal=any_journal, run_id="charge-42", lock_timeout=lock_timeout)
    def charge() -> str:
        with atomic_marker("send_money") as go:
            if go:
                effects.append(threading.current_thread().name)
                inside.set()
                leave.wait(10)
        return "charged"

    errors: list[BaseException] = []

    def call() -> None:
        try:
            assert charge() == "charged"
        except BaseException as exc:  # collected for the assertions below
            errors.append(exc)

    first = threading.Thread(target=call, name="first")
    first.start()
    assert inside.wait(10), "the first call never entered the marker"
    second = threading.Thread(target=call, name="second")
    second.start()
    if lock_timeout:
        second.join(0.5)
        assert second.is_alive(), "the second call must wait for the lease, not run"
    else:
        second.join(10)
    leave.set()
    first.join(10)
    second.join(10)
    return effects, errors


def test_a_second_thread_gets_run_locked(any_journal: Any) -> None:
    effects, errors = _race(any_journal, lock_timeout=0)
    assert effects == ["first"]
    assert len(errors) == 1 and isinstance(errors[0], RunLockedError)
    assert "another call in this process" in str(errors[0])


def test_a_second_thread_waits_with_lock_timeout_and_replays(any_journal: Any) -> None:
    effects, errors = _race(any_journal, lock_timeout=20)
    assert errors == []
    assert effects == ["first"], "the waiting call replayed the completed effect"


def test_two_asyncio_tasks_of_one_process(any_journal: Any) -> None:
    effects: list[int] = []

    @durable_async(journal=any_journal, run_id="refund-7")
    async def refund(tag: int) -> str:
        with atomic_marker("send_money") as go:
            if go:
                effects.append(tag)
                await asyncio.sleep(0.3)  # the other task starts meanwhile
        return "refunded"

    async def main() -> list[Any]:
        return await asyncio.gather(refund(1), refund(1), return_exceptions=True)

    results = asyncio.run(main())
    assert len(effects) == 1
    assert sorted(type(r).__name__ for r in results) == ["RunLockedError", "str"]


def test_the_refused_call_does_not_release_the_holders_lease(any_journal: Any) -> None:
    """After a refused second call, a third still finds the run held by the first."""
    inside, leave = threading.Event(), threading.Event()

    @durable(journal=any_journal, run_id="hold-1")
    def hold() -> int:
        inside.set()
        leave.wait(10)
        return 1

    t = threading.Thread(target=hold)
    t.start()
    assert inside.wait(10)
    for _ in range(2):
        with pytest.raises(RunLockedError):
            hold()
    leave.set()
    t.join(10)
    assert hold() == 1  # completed: returns its result
