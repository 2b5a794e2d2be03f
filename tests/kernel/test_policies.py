"""Step policies: retries with backoff, timeouts, dead letters, semantic retries (issue #3)."""

from __future__ import annotations

import asyncio
import time

import pytest

from letitloop import async_step, current_step, durable, durable_async, step
from letitloop.errors import ConfigError, DeadLetteredError, JournalError
from letitloop.kernel._policy import CLOCK, Invalid, Retry, StepTimeout, classify
from tests.helpers import as_json, invoke_lil


class RateLimited(Exception):
    pass


class HTTPError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Policy time runs only when the policy sleeps; the list records every wait."""
    now = [1_000_000.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        if seconds > 0:
            waits.append(round(seconds, 6))
            now[0] += seconds

    monkeypatch.setattr(CLOCK, "time", lambda: now[0])
    monkeypatch.setattr(CLOCK, "sleep", sleep)
    return waits


def flaky(failures: list[BaseException], value: str = "ok"):  # type: ignore[no-untyped-def]
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return value

    fn.calls = calls  # type: ignore[attr-defined]
    return fn


def _history(journal, run: str) -> list[tuple[int, str, str | None]]:  # type: ignore[no-untyped-def]
    attempts = journal.get_run(journal.find_run(run)).attempts
    return [(a.attempt, a.status, (a.error or {}).get("class")) for a in attempts]


def test_transient_failures_are_retried_with_exponential_backoff(any_journal, fake_clock) -> None:
    fn = flaky([RateLimited(), ConnectionError(), HTTPError(503)])
    policy = Retry(attempts=5, backoff=1.0, multiplier=2.0, max_backoff=3.0, jitter=False)

    @durable(journal=any_journal, run_id="backoff")
    def flow() -> str:
        return step("call", fn, retry=policy)

    assert flow() == "ok"
    assert fake_clock == [1.0, 2.0, 3.0]  # 1, 2, then capped at max_backoff
    assert _history(any_journal, "backoff") == [
        (1, "failed", "transient"),
        (2, "failed", "transient"),
        (3, "failed", "transient"),
        (4, "completed", None),
    ]


def test_full_jitter_stays_under_the_exponential_ceiling(fake_clock) -> None:
    policy = Retry(backoff=2.0, multiplier=3.0, max_backoff=10.0)
    for failures, ceiling in ((1, 2.0), (2, 6.0), (3, 10.0), (9, 10.0)):
        assert all(0 <= policy.delay(failures) <= ceiling for _ in range(200))


def test_permanent_failure_fails_at_once_and_is_not_dead_lettered(any_journal, fake_clock) -> None:
    fn = flaky([ValueError("bad input")])

    @durable(journal=any_journal, run_id="perm")
    def flow() -> str:
        return step("call", fn, retry=Retry(attempts=5))

    with pytest.raises(ValueError):
        flow()
    assert fake_clock == [] and len(fn.calls) == 1
    assert _history(any_journal, "perm") == [(1, "failed", "permanent")]
    assert flow() == "ok"  # not dead-lettered: the next call runs it again


def test_exhausted_step_is_dead_lettered_until_retried(any_journal, fake_clock) -> None:
    fn = flaky([RateLimited()] * 5)

    @durable(journal=any_journal, run_id="dead")
    def flow() -> str:
        return step("call", fn, retry=Retry(attempts=3, jitter=False))

    with pytest.raises(DeadLetteredError) as err:
        flow()
    assert err.value.step == "call" and "lil runs retry" in str(err.value)
    assert isinstance(err.value.__cause__, RateLimited)
    calls = len(fn.calls)
    with pytest.raises(DeadLetteredError):
        flow()  # stays dead: nothing runs
    assert len(fn.calls) == calls == 3
    run = any_journal.get_run(any_journal.find_run("dead")).run
    assert run.status == "failed" and run.error["type"].endswith("DeadLetteredError")
    any_journal.rearm_step(any_journal.find_run("dead"), by="tester")
    assert flow() == "ok"  # two more failures, then success, within the fresh budget
    history = _history(any_journal, "dead")
    assert [h[0] for h in history] == [1, 2, 3, 4, 5, 6]  # both budgets' attempts are kept
    assert history[-1][1] == "completed"
    with pytest.raises(JournalError, match=r"no dead-lettered step"):
        any_journal.rearm_step(any_journal.find_run("dead"), by="tester")


def test_default_classifier() -> None:
    r = Retry()
    assert classify(ConnectionResetError(), r) == "transient"
    assert classify(TimeoutError(), r) == "transient"
    assert classify(HTTPError(429), r) == "transient"
    assert classify(HTTPError(500), r) == "transient"
    assert classify(HTTPError(400), r) == "permanent"
    assert classify(RateLimited(), r) == "transient"  # by name
    assert classify(ConfigError("ours"), r) == "permanent"
    assert classify(KeyError("x"), r) == "permanent"
    assert classify(StepTimeout("t"), r) == "timeout"
    assert classify(KeyError("x"), Retry(retry_on=(KeyError,))) == "transient"
    assert classify(RateLimited(), Retry(classify=lambda e: "permanent")) == "permanent"


def test_async_step_over_its_timeout_is_cancelled_and_retried(any_journal) -> None:
    cancelled = []
    attempts = []

    async def slow() -> str:
        attempts.append(1)
        try:
            await asyncio.sleep(0.05 if len(attempts) > 1 else 5)
        except asyncio.CancelledError:
            cancelled.append(1)
            raise
        return "done"

    @durable_async(journal=any_journal, run_id="atimeout")
    async def flow() -> str:
        return await async_step("slow", slow, timeout=0.2, retry=Retry(attempts=2, backoff=0))

    t0 = time.perf_counter()
    assert asyncio.run(flow()) == "done"
    assert time.perf_counter() - t0 < 3 and cancelled == [1]
    assert _history(any_journal, "atimeout") == [(1, "failed", "timeout"), (2, "completed", None)]


def test_sync_step_over_its_timeout_is_recorded_as_timeout(any_journal) -> None:
    @durable(journal=any_journal, run_id="stimeout")
    def flow() -> str:
        return step("slow", time.sleep, 5, timeout=0.2)

    t0 = time.perf_counter()
    with pytest.raises(StepTimeout):
        flow()
    assert time.perf_counter() - t0 < 3
    assert _history(any_journal, "stimeout") == [(1, "failed", "timeout")]


def test_semantic_retry_passes_the_critique_and_counts_separately(any_journal, fake_clock) -> None:
    seen: list[tuple[str | None, str | None]] = []
    transport = [RateLimited()]

    def write(topic: str, feedback: str | None = None) -> str:
        seen.append((feedback, current_step().feedback))
        if transport:
            raise transport.pop(0)
        return "draft" if len(seen) < 3 else "draft\n\npara\n\npara\n\npara"

    def validate(draft: str) -> object:
        return draft.count("\n\n") >= 3 or Invalid("need at least 4 paragraphs")

    @durable(journal=any_journal, run_id="semantic")
    def flow() -> str:
        return step(
            "draft",
            write,
            "ai",
            validate=validate,
            max_validation_attempts=3,
            retry=Retry(attempts=2, backoff=0),
        )

    assert flow().count("para") == 3
    # attempt 1 transport failure; 2 rejected; 3 sees the critique and passes
    assert seen == [(None, None), (None, None), ("need at least 4 paragraphs",) * 2]
    attempts = any_journal.get_run(any_journal.find_run("semantic")).attempts
    errs = [a.error for a in attempts if a.error]
    assert [(e["class"], e["tries"], e["vtries"]) for e in errs] == [
        ("transient", 1, 0),
        ("invalid", 1, 1),
    ]


def test_validation_exhausted_dead_letters_with_every_verdict(any_journal) -> None:
    @durable(journal=any_journal, run_id="vdead")
    def flow() -> str:
        return step(
            "draft",
            lambda: "short",
            validate=lambda d: Invalid(f"too short: {d}"),
            max_validation_attempts=2,
        )

    with pytest.raises(DeadLetteredError, match="2 rejected outputs"):
        flow()
    attempts = any_journal.get_run(any_journal.find_run("vdead")).attempts
    assert [(a.error or {}).get("feedback") for a in attempts] == ["too short: short"] * 2
    assert attempts[-1].error["dead"] is True


def test_feedback_survives_a_crash_between_attempts(any_journal) -> None:
    """The critique is journaled, so an attempt started after a crash still receives it."""
    _crash_between_attempts(any_journal, restart_owner=False)


def test_feedback_and_counts_survive_an_owner_restart(journal_path) -> None:  # type: ignore[no-untyped-def]
    """The owner reloads the run from DuckDB: the started attempt still carries the critique."""
    _crash_between_attempts(journal_path, restart_owner=True)


def _crash_between_attempts(journal, *, restart_owner: bool) -> None:  # type: ignore[no-untyped-def]
    seen: list[str | None] = []
    state = {"crash": True}

    def write(feedback: str | None = None) -> str:
        seen.append(feedback)
        if feedback and state["crash"]:
            state["crash"] = False
            raise KeyboardInterrupt  # the process dies during the second attempt
        return "long enough" if feedback else "short"

    @durable(journal=journal, run_id="fbcrash")
    def flow() -> str:
        return step("draft", write, validate=lambda d: d != "short" or Invalid("longer please"))

    with pytest.raises(KeyboardInterrupt):
        flow()
    if restart_owner:
        from letitloop.journal.duckdb._client import stop_owner

        stop_owner(journal)
    assert flow() == "long enough"
    assert seen == [None, "longer please", "longer please"]


def test_lil_runs_retry_rearms_a_dead_letter(journal_path) -> None:  # type: ignore[no-untyped-def]

    failures = [RateLimited()] * 2

    def call() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    @durable(journal=journal_path, run_id="cli-dead")
    def flow() -> str:
        return step("call", call, retry=Retry(attempts=2, backoff=0))

    with pytest.raises(DeadLetteredError):
        flow()
    done = invoke_lil("runs", "retry", "cli-dead", "--from", "call", journal=journal_path)
    assert done.exit_code == 0, done.output
    assert flow() == "ok"
    shown = as_json(invoke_lil("runs", "show", "cli-dead", "--json", journal=journal_path))
    attempts = shown["attempts"]
    assert [a["status"] for a in attempts] == ["failed", "failed", "completed"]
    assert attempts[1]["error"]["dead"] is True and attempts[1]["resolution"] == "rearm"
    again = invoke_lil("runs", "retry", "cli-dead", journal=journal_path)
    assert again.exit_code == 1 and "no dead-lettered step" in again.output
