"""Cost ledger: per-attempt costs in micro-dollars, from record_cost() or response usage."""

from __future__ import annotations

import pytest

from letitloop import Retry, durable, record_cost, step
from letitloop.errors import ConfigError, NotInDurableContextError
from letitloop.kernel._cost import price, set_prices
from letitloop.testing import FakeLLM, RateLimitError


def test_response_usage_is_costed_and_totals_match_the_ledger(any_journal) -> None:
    llm = FakeLLM(replies={"q": "four words of answer"}, failures=[RateLimitError()])

    def ask() -> object:
        record_cost(usd=0.001)  # e.g. a search API the step pays for, on every attempt
        return llm.complete("q")

    @durable(journal=any_journal, run_id="costly")
    def flow() -> str:
        return step("ask", ask, retry=Retry(attempts=2, backoff=0)).text

    assert flow() == "four words of answer"
    detail = any_journal.get_run(any_journal.find_run("costly"))
    attempts = detail.attempts
    # attempt 1 was rate-limited: only its search cost; attempt 2: the explicit cost only,
    # since a step that records its own cost is not costed again from the response
    assert [a.cost_micros for a in attempts] == [1000, 1000]
    assert detail.run.cost_micros == sum(a.cost_micros for a in attempts) == 2000


def test_usage_alone_is_priced_from_the_table(any_journal) -> None:
    llm = FakeLLM(replies={"one two three": "a b"})

    @durable(journal=any_journal, run_id="usage")
    def flow() -> str:
        return step("ask", llm.complete, "one two three").text

    flow()
    [attempt] = any_journal.get_run(any_journal.find_run("usage")).attempts
    # fake-1 costs $1 per million input and $2 per million output tokens
    assert (attempt.tokens_in, attempt.tokens_out, attempt.model) == (3, 2, "fake-1")
    assert attempt.cost_micros == 3 * 1 + 2 * 2
    run = any_journal.list_runs()[0]
    assert (run.cost_micros, run.tokens) == (7, 5)


def test_record_cost_outside_a_step_is_an_error() -> None:
    with pytest.raises(NotInDurableContextError, match="inside the function passed to step"):
        record_cost(usd=1)


def test_prices_match_dated_model_names_and_can_be_overridden() -> None:
    assert price("gpt-4o-2024-08-06", 1_000_000, 0) == 2_500_000
    assert price("gpt-4o-mini", 1_000_000, 0) == 150_000  # the longer name wins
    assert price("unknown-model", 10, 10) is None
    set_prices({"my-model": (0.5, 1.5)})
    assert price("my-model", 2_000_000, 1_000_000) == 2_500_000
    with pytest.raises(ConfigError):
        set_prices({"bad": (1.0,)})  # type: ignore[dict-item]
