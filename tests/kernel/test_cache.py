"""The response cache: reuse across runs, savings journaled, TTL, validation never cached."""

from __future__ import annotations

import asyncio

import pytest

from letitloop import DeadLetteredError, Invalid, async_step, durable, durable_async, step
from letitloop.kernel._policy import CLOCK
from letitloop.testing import FakeLLM
from tests.helpers import invoke_lil


def _ask(journal, llm, run_id, **opts):  # type: ignore[no-untyped-def]
    @durable(journal=journal, run_id=run_id, name="ask")
    def flow(prompt: str) -> str:
        return step("llm", llm.complete, prompt, cache=True, **opts).text

    return flow


def test_same_prompt_is_served_from_the_cache_with_its_saving(any_journal) -> None:
    llm = FakeLLM()
    first = _ask(any_journal, llm, "r1")("summarize the report")
    again = _ask(any_journal, llm, "r2")("summarize the report")  # another run, same prompt
    assert again == first and len(llm.calls) == 1
    other = _ask(any_journal, llm, "r3")("summarize the memo")  # a different prompt misses
    assert other != first and len(llm.calls) == 2
    runs = {r.key: r for r in any_journal.list_runs()}
    [a1] = any_journal.get_run(runs["r1"].run_id).attempts
    [a2] = any_journal.get_run(runs["r2"].run_id).attempts
    assert (a1.cache, a2.cache) == ("miss", "hit")
    assert a1.cost_micros > 0 and a2.cost_micros == 0
    assert runs["r2"].saved_micros == a1.cost_micros and runs["r1"].saved_micros == 0
    entries = any_journal.cache_list()
    assert len(entries) == 2 and all(e.fn.endswith("FakeLLM.complete") for e in entries)


def test_cache_key_and_ttl(any_journal, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1_000.0]
    monkeypatch.setattr(CLOCK, "time", lambda: now[0])
    llm = FakeLLM()
    _ask(any_journal, llm, "a", ttl=60)("p")
    _ask(any_journal, llm, "b", ttl=60)("p")
    assert len(llm.calls) == 1
    _ask(any_journal, llm, "c", ttl=60, cache_key="prompt-v2")("p")  # another key: a miss
    assert len(llm.calls) == 2
    now[0] += 61
    _ask(any_journal, llm, "d", ttl=60)("p")  # expired
    assert len(llm.calls) == 3


def test_rejected_outputs_are_never_cached(any_journal) -> None:
    llm = FakeLLM(replies={"p": "bad"})

    @durable(journal=any_journal, run_id="v", name="validated")
    def flow() -> str:
        return step(
            "llm",
            llm.complete,
            "p",
            cache=True,
            max_validation_attempts=1,
            validate=lambda r: Invalid("no good"),
        ).text

    with pytest.raises(DeadLetteredError):
        flow()
    assert any_journal.cache_list() == []


def test_clear_and_async_steps(any_journal) -> None:
    llm = FakeLLM()

    @durable_async(journal=any_journal, run_id="async", name="fan")
    async def fan() -> list[str]:
        steps = [
            async_step(f"q{i}", llm.acomplete, f"prompt {i % 2}", cache=True) for i in range(2)
        ]
        return [r.text for r in await asyncio.gather(*steps)]

    asyncio.run(fan())
    assert len(llm.calls) == 2 and len(any_journal.cache_list()) == 2
    any_journal.cache_clear()
    assert any_journal.cache_list() == []


def test_lil_cache_list_and_clear(journal_path) -> None:  # type: ignore[no-untyped-def]
    import json

    _ask(journal_path, FakeLLM(), "cli")("hello")
    listed = invoke_lil("cache", "list", "--json", journal=journal_path)
    assert listed.exit_code == 0, listed.output
    [entry] = json.loads(listed.output)
    assert entry["fn"].endswith("FakeLLM.complete") and entry["cost_micros"] > 0
    table = invoke_lil("cache", "list", journal=journal_path)
    assert "FakeLLM.complete" in table.output
    cleared = invoke_lil("cache", "clear", journal=journal_path)
    assert cleared.exit_code == 0 and "cleared 1" in cleared.output
    again = invoke_lil("cache", "list", "--json", journal=journal_path)
    assert json.loads(again.output) == []
