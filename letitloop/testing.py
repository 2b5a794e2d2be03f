"""Test helpers: a deterministic fake language model, so pipelines run offline and repeatably.

    from letitloop.testing import FakeLLM, RateLimitError
    llm = FakeLLM(replies={"capital of France?": "Paris"}, failures=[RateLimitError(), None])
    llm.complete("capital of France?")   # raises RateLimitError (429), then answers "Paris"

Replies come from a mapping (exact prompt), a function of the prompt, or a default that derives a
stable text from the prompt's hash. Each response carries ``usage`` in both the OpenAI
(``prompt_tokens``/``completion_tokens``) and Anthropic (``input_tokens``/``output_tokens``)
spelling, counted in words, so cost tracking can be tested without a network.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

_WORDS = (
    "signal quarter revenue churn model latency budget launch customer roadmap hiring risk "
    "pricing audit invoice retention forecast margin pipeline review"
).split()


class RateLimitError(Exception):
    """What a provider raises on HTTP 429; letitloop's default classifier retries it."""

    status_code = 429

    def __init__(self, message: str = "429 Too Many Requests: slow down") -> None:
        super().__init__(message)


class ServerError(Exception):
    """A provider's HTTP 5xx; transient by default."""

    status_code = 503

    def __init__(self, message: str = "503 Service Unavailable") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens

    @property
    def completion_tokens(self) -> int:
        return self.output_tokens

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Response:
    """A completion: its text, the model that wrote it, and the token usage."""

    text: str
    model: str
    usage: Usage


@dataclass
class FakeLLM:
    """A scriptable, deterministic chat model (see the module docstring)."""

    replies: Mapping[str, str] | Callable[[str], str] | None = None
    failures: Iterable[BaseException | None] = ()
    latency: float = 0.0
    model: str = "fake-1"
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._failures = list(self.failures)

    def reply(self, prompt: str) -> str:
        """The text this model answers to ``prompt`` (no failure, no latency, not counted)."""
        if callable(self.replies):
            return self.replies(prompt)
        if self.replies is not None and prompt in self.replies:
            return self.replies[prompt]
        digest = hashlib.sha256(prompt.encode()).digest()
        words = [_WORDS[b % len(_WORDS)] for b in digest[:12]]
        return f"{' '.join(words).capitalize()}. (#{digest.hex()[:8]})"

    def complete(self, prompt: str, *, feedback: str | None = None) -> Response:
        """Answer ``prompt`` (with a critique of an earlier answer appended, if given)."""
        full = self._begin(prompt, feedback)
        if self.latency:
            time.sleep(self.latency)
        return self._answer(full)

    async def acomplete(self, prompt: str, *, feedback: str | None = None) -> Response:
        """``complete`` for async code: the latency is awaited, so calls overlap."""
        import asyncio

        full = self._begin(prompt, feedback)
        if self.latency:
            await asyncio.sleep(self.latency)
        return self._answer(full)

    def _begin(self, prompt: str, feedback: str | None) -> str:
        """Count the call and raise the next scripted failure, if any."""
        full = f"{prompt}\n\nFix this: {feedback}" if feedback else prompt
        self.calls.append(full)
        if self._failures:
            failure = self._failures.pop(0)
            if failure is not None:
                raise failure
        return full

    def _answer(self, full: str) -> Response:
        text = self.reply(full)
        return Response(text, self.model, Usage(len(full.split()), len(text.split())))
