"""A durable run traced with OpenTelemetry, its spans written to traces.jsonl as they end.

    python traced.py [--crash-at summarize]

The application sets up OpenTelemetry as usual (an SDK ``TracerProvider``, made the global one,
here with the SDK's console exporter writing one JSON object a line into traces.jsonl);
letitloop sees the global provider and traces without being told: each run is a span
``invoke_workflow digest``, each step attempt a child span ``step NAME``, with the model and
tokens of a model call, the cache, the retries and the replays. read_traces.py reads the file
back.

--crash-at summarize SIGKILLs the process inside the summarize step: the run's own span never
ends, so only the spans that ended before it are in the file. Run it again: the resumed run is
a new trace whose root span links to the first one, and its replayed steps are marked so.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from letitloop import Retry, durable, record_cost, step
from letitloop.testing import FakeLLM, RateLimitError

HERE = Path(__file__).resolve().parent
TRACES = HERE / "traces.jsonl"
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
llm = FakeLLM(failures=[RateLimitError()])  # the first call is rate-limited, then retried


def tracing() -> TracerProvider:
    """OpenTelemetry as an application sets it up: a global provider and an exporter."""
    out = TRACES.open("a", encoding="utf-8")
    exporter = ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None) + "\n")
    provider = TracerProvider(resource=Resource.create({"service.name": "cookbook-digest"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # each span written as it ends
    trace.set_tracer_provider(provider)
    return provider


def crash_here(point: str) -> None:
    """SIGKILL this process if it was started with --crash-at POINT."""
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def search(topic: str) -> list[str]:
    record_cost(usd=0.002)
    return [f"note {i} on {topic}" for i in range(3)]


def summarize(notes: list[str]) -> object:
    crash_here("summarize")
    return llm.complete("Summarize: " + "; ".join(notes))


@durable(name="digest", retry=Retry(attempts=3, backoff=0.01))
def digest(topic: str) -> str:
    notes = step("search", search, topic)
    summary = step("summarize", summarize, notes, cache=True).text
    return step("format", lambda s: f"# {topic}\n\n{s}\n", summary)


def main() -> int:
    provider = tracing()
    topic = next((a for a in sys.argv[1:] if not a.startswith("--") and a != CRASH_AT), "otel")
    print(digest(topic))
    provider.shutdown()
    print(f"spans in {TRACES.name}: {len(TRACES.read_text().splitlines())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
