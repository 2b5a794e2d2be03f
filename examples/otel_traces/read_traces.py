"""Read traces.jsonl back: each trace as a tree of spans, with what letitloop put on them.

    python read_traces.py

Spans are grouped by trace and nested by parent; a trace whose root span is missing belongs to
a process that died before its run's span ended (its steps' spans were written as they ended).
A root span's link to another trace is a resumed run pointing at its first attempt.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

TRACES = Path(__file__).resolve().parent / "traces.jsonl"


def millis(span: dict[str, Any]) -> float:
    start, end = (datetime.fromisoformat(span[k]) for k in ("start_time", "end_time"))
    return (end - start).total_seconds() * 1000


def describe(span: dict[str, Any]) -> str:
    """What a reader wants from a span: its outcome, and letitloop's and GenAI's attributes."""
    a = span["attributes"]
    parts = [f"{millis(span):.1f} ms"]
    if "lil.run.id" in a and span["name"].startswith("invoke_workflow"):
        parts.append(f"run {a['lil.run.id']} attempt {a.get('lil.run.attempt')}")
        if a.get("lil.run.resumed"):
            parts.append("resumed")
    if "lil.step.attempt" in a:
        parts.append(f"attempt {a['lil.step.attempt']}")
    if a.get("lil.step.replayed"):
        parts.append("replayed from the journal")
    if a.get("lil.step.cache", "off") != "off":
        parts.append(f"cache {a['lil.step.cache']}")
    if "gen_ai.request.model" in a:
        tokens_in, tokens_out = (
            a.get("gen_ai.usage.input_tokens"),
            a.get("gen_ai.usage.output_tokens"),
        )
        parts.append(f"model {a['gen_ai.request.model']} ({tokens_in} in, {tokens_out} out)")
    if span["status"]["status_code"] == "ERROR":
        raised = [e["attributes"].get("exception.type") for e in span["events"]]
        parts.append("ERROR " + ", ".join(r for r in raised if r))
    return ", ".join(parts)


def main() -> int:
    if not TRACES.exists():
        print("no traces.jsonl yet: run python traced.py first")
        return 1
    spans = [json.loads(line) for line in TRACES.read_text().splitlines() if line.strip()]
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in spans:
        traces[span["context"]["trace_id"]].append(span)
    for trace_id, members in sorted(traces.items(), key=lambda t: t[1][0]["start_time"]):
        print(f"trace {short(trace_id)} ({len(members)} spans)")
        show_tree(members)
    return 0


def short(trace_id: str) -> str:
    return trace_id.removeprefix("0x")[:8] + "…"


def show_tree(members: list[dict[str, Any]]) -> None:
    """The spans of one trace, each under its parent; spans whose parent is missing on top."""
    ids = {s["context"]["span_id"] for s in members}
    children: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
    for s in sorted(members, key=lambda s: s["start_time"]):
        children[s["parent_id"] if s["parent_id"] in ids else None].append(s)
    if not any(s["parent_id"] is None for s in children[None]):
        print("  (no root span: the process died before its run's span ended)")
    stack = [(span, 1) for span in reversed(children[None])]
    while stack:
        span, depth = stack.pop()
        print(f"{'  ' * depth}{span['name']}: {describe(span)}")
        for link in span["links"]:
            why = link["attributes"].get("lil.link", "linked").replace("_", " ")
            print(f"{'  ' * depth}  {why} trace {short(link['context']['trace_id'])}")
        stack += [(c, depth + 1) for c in reversed(children[span["context"]["span_id"]])]


if __name__ == "__main__":
    sys.exit(main())
