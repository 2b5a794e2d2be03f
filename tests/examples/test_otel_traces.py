"""examples/otel_traces: spans of a real SDK TracerProvider written to a file by the example,
the process SIGKILLed inside a step, the resumed run's trace linking to the first, and the
example's reader printing both trees."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.examples.cookbook import Example, killed, run_it


def test_a_crash_and_a_resume_as_two_linked_traces(example: Callable[..., Example]) -> None:
    ex = example("otel_traces")
    assert run_it(ex.readme) == ["python traced.py", "python read_traces.py"]

    crashed = ex.run("python traced.py --crash-at summarize")
    assert killed(crashed.returncode), crashed.stdout + crashed.stderr
    traces = ex.dir / "traces.jsonl"
    first = [json.loads(line) for line in traces.read_text().splitlines()]
    assert [s["name"] for s in first] == ["step search"]  # the run's own span never ended

    assert "spans in traces.jsonl: 6" in ex.ok("python traced.py")
    spans = [json.loads(line) for line in traces.read_text().splitlines()]
    second = [s for s in spans if s["context"]["trace_id"] != first[0]["context"]["trace_id"]]
    (root,) = [s for s in second if s["parent_id"] is None]
    assert root["name"] == "invoke_workflow digest" and root["attributes"]["lil.run.resumed"]
    (link,) = root["links"]
    assert link["context"]["trace_id"] == first[0]["context"]["trace_id"]
    assert link["context"]["span_id"] == first[0]["parent_id"]  # the first attempt's root
    by_name = [(s["name"], s["attributes"]) for s in second if s is not root]
    assert [n for n, _ in by_name] == [
        "step search",
        "step summarize",
        "step summarize",
        "step format",
    ]
    assert by_name[0][1]["lil.step.replayed"] is True
    failed, answered = (s for s in second if s["name"] == "step summarize")
    assert failed["status"]["status_code"] == "ERROR"
    assert answered["attributes"]["gen_ai.request.model"] == "fake-1"
    assert answered["attributes"]["gen_ai.usage.output_tokens"] > 0

    shown = ex.ok("python read_traces.py")
    assert shown.count("trace ") >= 2 and "(no root span: the process died" in shown
    assert "resumed from trace " + first[0]["context"]["trace_id"][2:10] in shown
    assert "replayed from the journal" in shown
    assert "ERROR letitloop.testing.RateLimitError" in shown and "model fake-1 (" in shown

    again = ex.ok("python traced.py")  # a finished run: its journaled result, no new span
    assert "spans in traces.jsonl: 6" in again
