"""The fake language model is deterministic, scriptable, and speaks both usage dialects."""

from __future__ import annotations

import asyncio
import time

import pytest

from letitloop.kernel._policy import Retry, classify
from letitloop.testing import FakeLLM, RateLimitError, ServerError


def test_default_replies_are_stable_and_prompt_specific() -> None:
    a, b = FakeLLM(), FakeLLM()
    assert a.complete("summarize Q3").text == b.complete("summarize Q3").text
    assert a.complete("summarize Q3").text != a.complete("summarize Q4").text
    assert a.calls == ["summarize Q3", "summarize Q3", "summarize Q4"]


def test_scripted_replies_failures_and_feedback() -> None:
    llm = FakeLLM(replies={"q": "answer"}, failures=[RateLimitError(), None, ServerError()])
    with pytest.raises(RateLimitError):
        llm.complete("q")
    assert llm.complete("q").text == "answer"
    with pytest.raises(ServerError):
        llm.complete("q")
    assert llm.complete("q", feedback="shorter").text == llm.reply("q\n\nFix this: shorter")
    echo = FakeLLM(replies=str.upper)
    assert echo.complete("hi").text == "HI"


def test_usage_in_openai_and_anthropic_spelling() -> None:
    r = FakeLLM(replies={"one two three": "four five"}).complete("one two three")
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (3, 2)
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens) == (3, 2, 5)
    assert r.model == "fake-1"


def test_failures_are_transient_for_the_default_classifier() -> None:
    assert classify(RateLimitError(), Retry()) == "transient"
    assert classify(ServerError(), Retry()) == "transient"


def test_latency_is_slept_or_awaited() -> None:
    llm = FakeLLM(latency=0.2)
    t0 = time.perf_counter()
    llm.complete("x")
    assert time.perf_counter() - t0 >= 0.2

    async def both() -> list[str]:
        rs = await asyncio.gather(*(llm.acomplete(f"p{i}") for i in range(5)))
        return [r.text for r in rs]

    t0 = time.perf_counter()
    assert len(asyncio.run(both())) == 5
    elapsed = time.perf_counter() - t0
    assert 0.2 <= elapsed < 0.6  # each call waits, and the five waits overlap (not 5 x 0.2 s)
