"""Spans of runs and steps, with the SDK's in-memory exporter and a real owner-backed journal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from letitloop import durable, record_cost, step
from letitloop.kernel import _tracing
from tests.conftest import ROOT, modules_after
from tests.helpers import wait_until


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """A provider of the test's own (the global one stays unset), exporting to memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _tracing.use_tracer_provider(provider)
    yield exporter
    _tracing.use_tracer_provider(None)


def _by_name(exporter: InMemorySpanExporter) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for s in exporter.get_finished_spans():
        out.setdefault(s.name, []).append(s)
    return out


class _Usage:
    prompt_tokens = 120
    completion_tokens = 30


class _Reply:
    """Looks like an OpenAI response: the kernel costs it from usage and model."""

    model = "gpt-4o-mini"
    usage = _Usage()


def test_run_and_steps_are_spans_with_parents_and_attributes(
    spans: InMemorySpanExporter, journal_path: Path
) -> None:
    @durable(journal=str(journal_path), name="pipeline")
    def pipeline(x: int) -> int:
        a = step("double", lambda: x * 2)
        step("ask", lambda: _Reply())
        record = step("priced", lambda: record_cost(input_tokens=5, output_tokens=7, model="m1"))
        assert record is None
        return a

    assert pipeline(21) == 42
    got = _by_name(spans)
    root = got["invoke_workflow pipeline"][0]
    assert root.parent is None
    assert root.attributes is not None
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.workflow.name"] == "pipeline"
    assert str(root.attributes["lil.run.id"]).startswith("pipeline:")
    assert root.attributes["lil.run.epoch"] == 0
    assert root.attributes["lil.run.attempt"] == 1
    assert root.attributes["lil.run.resumed"] is False
    for name, pos in (("step double", 0), ("step ask", 1), ("step priced", 2)):
        (s,) = got[name]
        assert s.parent is not None and s.parent.span_id == root.context.span_id
        assert s.context.trace_id == root.context.trace_id
        assert s.attributes is not None
        assert s.attributes["lil.step.position"] == pos
        assert s.attributes["lil.step.attempt"] == 1
        assert s.attributes["lil.step.kind"] == "step"
        assert s.attributes["lil.step.replayed"] is False
        assert s.attributes["lil.step.cache"] == "off"
    ask = got["step ask"][0].attributes
    assert ask is not None
    assert ask["gen_ai.request.model"] == "gpt-4o-mini"
    assert ask["gen_ai.usage.input_tokens"] == 120
    assert ask["gen_ai.usage.output_tokens"] == 30
    priced = got["step priced"][0].attributes
    assert priced is not None and priced["gen_ai.request.model"] == "m1"
    assert priced["gen_ai.usage.input_tokens"] == 5
    assert "gen_ai.request.model" not in (got["step double"][0].attributes or {})


def test_failed_attempts_carry_status_and_replays_are_marked(
    spans: InMemorySpanExporter, journal_path: Path
) -> None:
    calls = {"n": 0}

    def flaky() -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("first call fails")
        return "ok"

    @durable(journal=str(journal_path), name="job")
    def job() -> str:
        step("one", lambda: 1)
        return step("flaky", flaky)

    with pytest.raises(ValueError):
        job()
    failed = _by_name(spans)["step flaky"][0]
    assert failed.status.status_code is StatusCode.ERROR
    assert "first call fails" in (failed.status.description or "")
    assert any(e.name == "exception" for e in failed.events)
    assert _by_name(spans)["invoke_workflow job"][0].status.status_code is StatusCode.ERROR
    spans.clear()

    assert job() == "ok"  # a second call resumes: step one replays, flaky runs again
    got = _by_name(spans)
    (one,) = got["step one"]
    assert one.attributes is not None and one.attributes["lil.step.replayed"] is True
    assert one.end_time is not None and one.start_time is not None
    (again,) = got["step flaky"]
    assert again.attributes is not None and again.attributes["lil.step.replayed"] is False
    assert again.attributes["lil.step.attempt"] == 2
    assert again.status.status_code is not StatusCode.ERROR
    root = got["invoke_workflow job"][0]
    assert root.attributes is not None and root.attributes["lil.run.resumed"] is True
    assert len(root.links) == 1  # linked to the first attempt's root


def _square(v: int) -> int:
    return v * v


def test_cache_hits_are_marked(spans: InMemorySpanExporter, journal_path: Path) -> None:
    @durable(journal=str(journal_path), name="cached")
    def cached(n: int) -> int:
        return step("square", _square, n, cache=True)

    @durable(journal=str(journal_path), name="cached_again")
    def again(n: int) -> int:
        return step("square", _square, n, cache=True)

    assert cached(3) == 9
    (miss,) = _by_name(spans)["step square"]
    assert miss.attributes is not None and miss.attributes["lil.step.cache"] == "miss"
    spans.clear()
    assert again(3) == 9  # another run, the same call: the cached output, no work
    (hit,) = _by_name(spans)["step square"]
    assert hit.attributes is not None and hit.attributes["lil.step.cache"] == "hit"
    assert hit.attributes["lil.step.replayed"] is False


_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from tests.otel._jsonl import JsonLinesExporter
    from letitloop import durable, step

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(sys.argv[2])))
    trace.set_tracer_provider(provider)

    @durable(journal=sys.argv[1], name="long", run_id="long")
    def long() -> str:
        step("first", lambda: "a")
        def second() -> str:
            if sys.argv[3] == "hang":
                open(sys.argv[4], "w").close()
                time.sleep(600)
            return "b"
        return step("second", second)

    print(long())
    """
)


def _spawn(journal: Path, out: Path, mode: str, flag: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LIL_OTEL", None)  # the app's own global provider is what turns tracing on
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(journal), str(out), mode, str(flag)],
        env=env,
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_resume_after_sigkill_is_a_new_trace_linked_to_the_first(
    journal_path: Path, tmp_path: Path
) -> None:
    first_out, second_out, flag = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "flag"
    proc = _spawn(journal_path, first_out, "hang", flag)

    def reached() -> bool:
        assert proc.poll() is None, "the child died before its second step"
        return flag.exists()

    wait_until(reached, 60, what="the child to reach its second step")
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    (first,) = [r for r in _rows(first_out) if r["name"] == "step first"]
    first_root = (first["trace"], first["parent"])  # the root never ended: killed

    proc = _spawn(journal_path, second_out, "finish", flag)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip() == "b"
    rows = {r["name"]: r for r in _rows(second_out)}
    root = rows["invoke_workflow long"]
    assert root["trace"] != first_root[0]  # a new trace...
    assert root["links"] == [{"trace": first_root[0], "span": first_root[1]}]  # ...linked
    assert root["attrs"]["lil.run.attempt"] == 2 and root["attrs"]["lil.run.resumed"] is True
    assert rows["step first"]["attrs"]["lil.step.replayed"] is True
    assert rows["step first"]["parent"] == root["span"]
    assert rows["step second"]["attrs"]["lil.step.replayed"] is False
    assert rows["step second"]["trace"] == root["trace"]


def test_tracing_off_imports_nothing_from_opentelemetry(journal_path: Path) -> None:
    code = (
        "from letitloop import durable, step\n"
        f"@durable(journal={str(journal_path)!r}, name='f')\n"
        "def f():\n    return step('s', lambda: 1)\n"
        "assert f() == 1\n"
    )
    loaded = modules_after(code)
    assert "letitloop.kernel._tracing" in loaded  # the hooks ran...
    assert not [m for m in loaded if m.startswith("opentelemetry")]  # ...and imported nothing


async def test_async_steps_under_gather_are_children_of_their_run(
    spans: InMemorySpanExporter, journal_path: Path
) -> None:
    """An async workflow's concurrent steps (``asyncio.gather``) are spans under its run's span,
    in its trace; called again, they are short spans marked replayed."""
    import asyncio

    from letitloop import async_step, durable_async

    async def fetch(i: int) -> int:
        await asyncio.sleep(0.01)
        return i * i

    @durable_async(journal=str(journal_path), name="fanin", run_id="a")
    async def fanin() -> int:
        parts = await asyncio.gather(*(async_step(f"fetch{i}", fetch, i) for i in range(3)))
        return sum(parts)

    assert await fanin() == 5
    got = _by_name(spans)
    (root,) = got["invoke_workflow fanin"]
    for i in range(3):
        (s,) = got[f"step fetch{i}"]
        assert s.parent is not None and s.parent.span_id == root.context.span_id
        assert s.context.trace_id == root.context.trace_id
        assert s.attributes is not None and s.attributes["lil.step.replayed"] is False
    spans.clear()
    assert await fanin() == 5  # completed: replayed, nothing runs
    again = _by_name(spans)
    for i in range(3):
        for s in again.get(f"step fetch{i}", []):
            assert s.attributes is not None and s.attributes["lil.step.replayed"] is True
