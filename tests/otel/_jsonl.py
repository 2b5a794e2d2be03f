"""A span exporter that appends each ended span as one JSON line (for subprocess tests)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class JsonLinesExporter(SpanExporter):
    """Writes name, ids, parent, links and attributes of every span, flushed per span."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as f:
            for s in spans:
                ctx = s.get_span_context()
                assert ctx is not None
                row: dict[str, Any] = {
                    "name": s.name,
                    "trace": f"{ctx.trace_id:032x}",
                    "span": f"{ctx.span_id:016x}",
                    "parent": f"{s.parent.span_id:016x}" if s.parent else None,
                    "links": [
                        {"trace": f"{x.context.trace_id:032x}", "span": f"{x.context.span_id:016x}"}
                        for x in s.links
                    ],
                    "attrs": dict(s.attributes or {}),
                }
                f.write(json.dumps(row) + "\n")
                f.flush()
        return SpanExportResult.SUCCESS
