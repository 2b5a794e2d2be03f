"""Point 6: status that tells the truth: a run's ``updated`` moves with every step."""

from __future__ import annotations

import threading
import time
from typing import Any

from letitloop import durable, step
from tests.helpers import invoke_lil, wait_until


def test_updated_moves_with_every_step_while_the_run_goes_on(any_journal: Any) -> None:
    go_on = threading.Event()

    @durable(journal=any_journal, name="slow", run_id="s1")
    def slow() -> int:
        step("one", lambda: time.sleep(0.05) or 1)
        step("two", lambda: time.sleep(0.05) or 2)
        go_on.wait(30)
        return 3

    worker = threading.Thread(target=slow, daemon=True)
    worker.start()
    try:

        def two_done() -> bool:
            run = any_journal.list_runs(workflow="slow")
            attempts = any_journal.get_run("slow:s1").attempts if run else []
            return len([a for a in attempts if a.status == "completed"]) == 2

        wait_until(two_done, 20, what="two completed steps", interval=0.02)
        [info] = any_journal.list_runs(workflow="slow")
        ended = max(a.ended or 0 for a in any_journal.get_run("slow:s1").attempts)
        assert info.status == "running"
        assert info.updated >= ended > info.created + 0.09  # the last step, not the start
    finally:
        go_on.set()
        worker.join(30)


def test_a_runs_duration_is_the_sum_of_its_tries_not_the_time_since_creation(
    any_journal: Any,
) -> None:
    from letitloop import Suspended, suspend

    @durable(journal=any_journal, name="paused", run_id="p1")
    def paused() -> int:
        step("one", lambda: time.sleep(0.05) or 1)
        suspend("waiting for data")
        step("two", lambda: time.sleep(0.05) or 2)
        return 3

    try:
        paused()
    except Suspended:
        pass
    time.sleep(1.2)  # nobody executes the run meanwhile
    assert paused() == 3
    [info] = any_journal.list_runs(workflow="paused")
    assert info.updated - info.created > 1.2
    assert info.active_seconds is not None and 0.1 <= info.active_seconds < 0.8
    assert any_journal.get_run("paused:p1").run.active_seconds == info.active_seconds


def test_budgets_show_in_the_run_listing_and_detail(any_journal: Any) -> None:
    @durable(journal=any_journal, name="b", run_id="b1")
    def flow() -> int:
        return step("one", lambda: 1)

    flow()
    assert any_journal.get_run("b:b1").run.budget is None
    any_journal.set_budget("b:b1", "ana", usd_micros=2_500_000, tokens=900)
    assert any_journal.get_run("b:b1").run.budget == (2_500_000, 900)
    assert any_journal.list_runs(workflow="b")[0].budget == (2_500_000, 900)


def test_lil_runs_show_gives_the_run_time_and_the_budget(journal_path: Any) -> None:
    from letitloop.journal.duckdb._client import open_journal

    journal = open_journal(journal_path)

    @durable(journal=journal, name="b", run_id="b1")
    def flow() -> int:
        return step("one", lambda: 1)

    flow()
    journal.set_budget("b:b1", "ana", usd_micros=2_500_000, tokens=900)
    result = invoke_lil("runs", "show", "b1", journal=journal_path)
    assert result.exit_code == 0, result.output
    assert "ran for" in result.stdout
    assert "$2.50, 900 tokens" in result.stdout  # one money format on every surface


def test_per_attempt_costs_add_up_to_the_run_total(any_journal: Any) -> None:
    from letitloop import Retry, record_cost

    tries = {"n": 0}

    def flaky() -> str:
        tries["n"] += 1
        record_cost(0.25, input_tokens=10, output_tokens=5)
        if tries["n"] == 1:
            raise RuntimeError("rate limited")
        return "ok"

    @durable(
        journal=any_journal,
        name="c",
        run_id="c1",
        retry=Retry(attempts=3, backoff=0.0, retry_on=(RuntimeError,)),
    )
    def flow() -> str:
        record = step("cheap", lambda: record_cost(0.5) or "a")
        return record + step("flaky", flaky)

    assert flow() == "aok"
    detail = any_journal.get_run("c:c1")
    assert sum(a.cost_micros for a in detail.attempts) == detail.run.cost_micros == 1_000_000
    assert [a.cost_micros for a in detail.attempts if a.name == "flaky"] == [250_000, 250_000]


def test_approvals_count_toward_steps_done(any_journal: Any) -> None:
    from letitloop import ApprovalPending, approval

    @durable(journal=any_journal, name="ap", run_id="a1")
    def flow() -> bool:
        step("draft", lambda: 1)
        return approval("publish", {"n": 1}, wait=False).approved

    try:
        flow()
    except ApprovalPending as waiting:
        any_journal.decide_approval(waiting.approval_id, approved=True, by="ana")
    assert flow() is True
    [info] = any_journal.list_runs(workflow="ap")
    positions = {a.position for a in any_journal.get_run("ap:a1").attempts}
    assert (info.status, info.steps_done, len(positions)) == ("completed", 2, 2)


def test_lil_runs_show_lists_each_attempts_cost(journal_path: Any) -> None:
    from letitloop import record_cost
    from letitloop.journal.duckdb._client import open_journal

    journal = open_journal(journal_path)

    @durable(journal=journal, name="c", run_id="c2")
    def flow() -> str:
        return step("cheap", lambda: record_cost(0.5) or "a")

    flow()
    result = invoke_lil("runs", "show", "c2", journal=journal_path)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("$0.50") == 2  # the attempt's row and the run's total


def test_a_runs_duration_is_known_on_every_backend(backend_journal: Any) -> None:
    """``RunInfo.active_seconds``, the sum of a run's tries, on memory, DuckDB and PostgreSQL
    alike (PostgreSQL used to leave it empty, so the surfaces showed no duration)."""
    from letitloop import Suspended, suspend

    @durable(journal=backend_journal, name="twice", run_id="t1")
    def twice() -> int:
        step("one", lambda: time.sleep(0.1) or 1)
        suspend("waiting for data")
        step("two", lambda: time.sleep(0.1) or 2)
        return 3

    try:
        twice()
    except Suspended:
        pass
    time.sleep(1.0)  # nobody executes the run meanwhile: not part of its duration
    assert twice() == 3
    [info] = backend_journal.list_runs(workflow="twice")
    assert info.active_seconds is not None and 0.2 <= info.active_seconds < 0.9
    assert backend_journal.get_run("twice:t1").run.active_seconds == info.active_seconds
