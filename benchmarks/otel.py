"""Per-step overhead of tracing: median step time with the SDK on (in-memory exporter) vs off."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from letitloop import durable, step
from letitloop.kernel._tracing import use_tracer_provider

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300


def _per_step(path: str, tag: str) -> float:
    @durable(journal=path, name=f"bench_{tag}")
    def run() -> None:
        for i in range(STEPS):
            step("s", lambda v: v, i)

    t = time.perf_counter()
    run()
    return (time.perf_counter() - t) / STEPS * 1e6


def main() -> None:
    path = os.path.join(tempfile.mkdtemp(), "bench.duckdb")
    off, on = [], []
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for i in range(5):
        use_tracer_provider(None)
        off.append(_per_step(path, f"off{i}"))
        use_tracer_provider(provider)
        on.append(_per_step(path, f"on{i}"))
        exporter.clear()
    use_tracer_provider(None)
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"per step: off {m_off:.0f} us, on {m_on:.0f} us, ratio {m_on / m_off:.2f}")
    from letitloop.journal.duckdb._client import stop_owner

    stop_owner(path)


if __name__ == "__main__":
    main()
