"""Records nobody waits for (``append(sync=False)``) are never lost, whichever thread writes
next: several threads of one process each running a run of their own, their records unwaited,
as ``step.map`` items on a thread pool do. On every backend."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from letitloop import durable, step
from letitloop.kernel._options import DurableOptions
from letitloop.kernel._runtime import _Invocation, _run_sync
from tests.helpers import wait_until
from tests.kernel.conftest import any_journal

__all__ = ["any_journal"]


def _one(journal: Any, i: int) -> int:
    def body(n: int) -> int:
        return step("square", lambda: n * n)

    opts = DurableOptions.build(run_id=f"item-{i}", journal=journal)
    inv = _Invocation(opts, body, (i,), {}, "unwaited")
    inv.lazy_done = True  # the done record is written unwaited
    return int(_run_sync(inv, None))


def test_unwaited_records_of_concurrent_runs_all_land(any_journal: Any) -> None:
    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(lambda i: _one(any_journal, i), range(30))) == [
            i * i for i in range(30)
        ]

    def landed() -> list[Any] | None:
        runs = any_journal.list_runs(workflow="unwaited", limit=100)
        return runs if {r.status for r in runs} == {"completed"} else None

    # unwaited: it may land a moment later, but it lands
    runs = wait_until(
        landed,
        5,
        what=lambda: sorted(
            (r.run_id, r.status) for r in any_journal.list_runs(workflow="unwaited", limit=100)
        ),
    )
    assert len(runs) == 30
    assert {r.status for r in runs} == {"completed"}, sorted((r.run_id, r.status) for r in runs)


def test_unwaited_step_starts_of_concurrent_runs_all_land(any_journal: Any) -> None:
    """A step start is unwaited too: a run killed mid-step must show its attempt started."""

    @durable(journal=any_journal, name="starts")
    def run(i: int) -> int:
        return step("work", lambda: i)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(run, range(30)))
    for info in any_journal.list_runs(workflow="starts", limit=100):
        detail = any_journal.get_run(info.run_id)
        assert [a.status for a in detail.attempts] == ["completed"], detail.attempts
