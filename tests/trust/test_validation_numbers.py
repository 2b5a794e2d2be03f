"""Point 1 of issue 14: no number a valid call passes can brick a journal.

Each test runs against the real owner process and a real DuckDB file. Before the fix each of
these calls was accepted and then made every owner exit on fold, forever after.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from letitloop import durable, step
from letitloop.errors import ConfigError
from letitloop.kernel._cost import record_cost
from tests.helpers import invoke_lil


def _healthy(journal: Any) -> None:
    """The owner still serves: a listing works and a new run completes."""
    journal.list_runs()

    @durable(journal=journal, name="after")
    def after() -> int:
        return step("one", lambda: 1)

    assert after() == 1


@pytest.mark.parametrize(
    "call",
    [
        lambda: record_cost(input_tokens=3_000_000_000),
        lambda: record_cost(output_tokens=2**40),
        lambda: record_cost(usd=1e13),
        lambda: record_cost(float("nan")),
        lambda: record_cost(input_tokens=3e9),  # type: ignore[arg-type]
    ],
    ids=["tokens-3e9", "tokens-2**40", "usd-1e13", "usd-nan", "float-tokens"],
)
def test_record_cost_out_of_range_fails_at_the_call(journal: Any, call: Any) -> None:
    @durable(journal=journal, name="costly")
    def costly() -> int:
        return step("spend", lambda: (call(), 1)[1])

    with pytest.raises(ConfigError) as info:
        costly()
    assert "record_cost" in str(info.value) or "journal holds at most" in str(info.value)
    _healthy(journal)


def test_provider_usage_of_2_40_tokens_is_refused_clearly(journal: Any) -> None:
    reply = SimpleNamespace(model="gpt-4o", usage={"prompt_tokens": 2**40, "completion_tokens": 1})

    @durable(journal=journal, name="llm")
    def llm() -> Any:
        return step("ask", lambda: reply)

    with pytest.raises(ConfigError, match="usage of the step's SimpleNamespace output"):
        llm()
    _healthy(journal)


def test_token_sums_over_a_run_do_not_overflow(journal: Any) -> None:
    @durable(journal=journal, name="big")
    def big() -> int:
        for i in range(3):  # each attempt at the per-count maximum: a row sums past INTEGER
            step(f"s{i}", lambda: record_cost(input_tokens=2**30, output_tokens=2**30))
        return 1

    assert big() == 1
    (info,) = [r for r in journal.list_runs() if r.workflow == "big"]
    assert info.tokens == 3 * 2**31
    assert journal.get_run(info.run_id).run.tokens == 3 * 2**31
    _healthy(journal)


@pytest.mark.parametrize("usd", ["1e13", "-1", "nan", "inf"])
def test_lil_runs_budget_out_of_range_fails_clearly(
    journal_path: Path, journal: Any, usd: str
) -> None:
    @durable(journal=journal, name="budgeted")
    def budgeted() -> int:
        return step("one", lambda: 1)

    budgeted()
    (info,) = journal.list_runs()
    res = invoke_lil("runs", "budget", info.run_id, "--usd", usd, journal=journal_path)
    assert res.exit_code != 0
    assert "--usd must be a number of US dollars" in res.output, res.output
    assert "Traceback" not in res.output
    _healthy(journal)


def test_budget_beyond_the_column_is_refused_by_the_owner_itself(journal: Any) -> None:
    """A client that skips the CLI's check still cannot make the owner store it."""
    from letitloop.errors import JournalError

    @durable(journal=journal, name="budgeted2")
    def budgeted2() -> int:
        return step("one", lambda: 1)

    budgeted2()
    (info,) = journal.list_runs()
    with pytest.raises(JournalError, match="out of range"):
        journal.set_budget(info.run_id, "me", usd_micros=10**19)
    with pytest.raises(JournalError, match="out of range"):
        journal.set_budget(info.run_id, "me", tokens=2**62)
    _healthy(journal)


def test_memory_journal_refuses_the_same_numbers(memory_journal: Any) -> None:
    from letitloop.errors import JournalError

    @durable(journal=memory_journal, name="m")
    def m() -> int:
        return step("one", lambda: 1)

    m()
    (info,) = memory_journal.list_runs()
    with pytest.raises(JournalError, match="out of range"):
        memory_journal.set_budget(info.run_id, "me", usd_micros=10**19)
