"""``letitloop.report()``: the journal's analytics as charts in a notebook.

The same summary ``lil report`` prints (``journal._analytics.summary``), drawn as inline SVG:
cost and attempts per day, cost per workflow and model, p50/p95 latency per step name, failure
rates. Plain SVG in the HTML output needs no plotting library and renders in JupyterLab, VS
Code, nbviewer and exported HTML alike; every label is escaped (names come from the journal).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from letitloop import journal as an, operate as fmt
from letitloop.notebook_ext._base import journal_of

BLUE, RED, GREEN, GREY = "#0969da", "#cf222e", "#1a7f37", "#d0d7de"
LIGHT_BLUE = "#9cc7f5"
FONT = "font-family='system-ui, sans-serif' font-size='12'"
WIDTH = 680  # each chart's width in pixels


@dataclass(frozen=True)
class Report:
    """A journal's analytics that draws itself as charts in Jupyter and as text elsewhere."""

    summary: an.Summary

    def _repr_html_(self) -> str:
        return report_html(self.summary)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())

    def text(self) -> str:
        s = self.summary
        lines = [f"letitloop report · {s.location} · {fmt.since_words(s.since)}"]
        lines.append(
            f"{s.runs} runs ({s.failed_runs} failed), {s.attempts} step attempts "
            f"({s.failed_attempts} failed), cost {fmt.dollars(s.cost_usd)}, "
            f"saved by cache {fmt.dollars(s.saved_usd)}"
        )
        if s.days:
            lines.append(f"cost per day {s.days[0]} → {s.days[-1]}: {fmt.sparkline(s.daily_cost)}")
        for r in s.slowest[:5]:
            lines.append(
                f"  {r['name']}: p50 {fmt.duration(r['p50_s'])}, p95 {fmt.duration(r['p95_s'])}"
            )
        return "\n".join(lines)


def report(journal: Any = None, *, since: str | float | None = None, top: int = 10) -> Report:
    """The journal's analytics as charts (in a notebook) or text: cost per day, cost per
    workflow and model, the slowest steps and failure rates. ``since``: ``"7d"``, a date, or
    epoch seconds; ``journal``: a path, a ``postgresql://`` URL or a journal (None: the one
    ``lil`` finds)."""
    cut = an.parse_since(since) if isinstance(since, str) else since
    return Report(an.summary(journal_of(journal), cut, top=top))


def report_html(s: an.Summary) -> str:
    e = html.escape
    head = (
        f"<div class='lil-report' style='font-family:system-ui,sans-serif'>"
        f"<h3 style='margin:4px 0'>letitloop report</h3>"
        f"<div style='color:#57606a'>{e(s.location)} · {e(fmt.since_words(s.since))}</div>"
    )
    if not s.runs and not s.attempts:
        return head + "<p>No runs in this journal (or in this time) yet.</p></div>"
    tiles = [
        ("runs", f"{s.runs:,}", f"{s.failed_runs:,} failed"),
        ("step attempts", f"{s.attempts:,}", f"{s.failed_attempts:,} failed"),
        ("cost", fmt.dollars(s.cost_usd), f"{s.tokens:,} tokens"),
        ("saved by cache", fmt.dollars(s.saved_usd), ""),
    ]
    body = (
        "<div style='display:flex;gap:24px;margin:8px 0'>"
        + "".join(
            f"<div><div style='color:#57606a'>{e(k)}</div><div style='font-size:20px'>{e(v)}</div>"
            f"<div style='color:#57606a;font-size:11px'>{e(sub)}</div></div>"
            for k, v, sub in tiles
        )
        + "</div>"
    )
    charts: list[str] = []
    if s.days:
        charts.append(
            _section("Cost per day", _columns(s.days, s.daily_cost, None, BLUE, fmt.dollars))
        )
        charts.append(
            _section(
                "Step attempts per day (failed in red)",
                _columns(s.days, s.daily_attempts, s.daily_failed, GREEN, lambda v: f"{v:,.0f}"),
            )
        )
    rows: list[tuple[str, float, float | None]]
    if s.by_workflow_model:
        rows = [
            (f"{r['workflow']} · {r['model'] or '-'}", float(r["cost_usd"] or 0), None)
            for r in s.by_workflow_model
        ]
        charts.append(_section("Cost per workflow and model", _bars(rows, BLUE, fmt.dollars)))
    if s.slowest:
        rows = [(r["name"], float(r["p95_s"] or 0), float(r["p50_s"] or 0)) for r in s.slowest]
        charts.append(
            _section(
                "Slowest steps: p95 (light) and p50 (dark)", _bars(rows, LIGHT_BLUE, fmt.duration)
            )
        )
    if s.failures:
        rows = [(r["name"], float(r["failure_rate"]), None) for r in s.failures]
        charts.append(_section("Failure rate per step name", _bars(rows, RED, fmt.pct)))
    return head + body + "".join(charts) + "</div>"


def _section(title: str, svg: str) -> str:
    return f"<div style='margin-top:10px'><b>{html.escape(title)}</b><br>{svg}</div>"


def _bars(
    rows: Sequence[tuple[str, float, float | None]], color: str, fmt: Any, label_w: int = 240
) -> str:
    """Horizontal bars, one per row: (label, value, an inner value drawn darker or None)."""
    e = html.escape
    top = max((v for _, v, _ in rows), default=0) or 1.0
    room = WIDTH - label_w - 130
    bar_h, gap = 16, 6
    height = len(rows) * (bar_h + gap) + gap
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' {FONT}>"]
    for i, (label, value, inner) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        w = max(1.0, value / top * room)
        parts.append(
            f"<text x='{label_w - 6}' y='{y + 12}' text-anchor='end'>{e(_cut(label))}</text>"
            f"<rect x='{label_w}' y='{y}' width='{w:.1f}' height='{bar_h}' fill='{color}'>"
            f"<title>{e(label)}: {e(fmt(value))}</title></rect>"
        )
        if inner is not None:
            parts.append(
                f"<rect x='{label_w}' y='{y}' width='{max(1.0, inner / top * room):.1f}' "
                f"height='{bar_h}' fill='{BLUE}'><title>{e(label)}: {e(fmt(inner))}</title></rect>"
            )
        shown = fmt(value) + (f" (p50 {fmt(inner)})" if inner is not None else "")
        parts.append(f"<text x='{label_w + w + 6:.1f}' y='{y + 12}'>{e(shown)}</text>")
    return "".join(parts) + "</svg>"


def _columns(
    days: Sequence[str],
    values: Sequence[float],
    failed: Sequence[float] | None,
    color: str,
    fmt: Any,
    height: int = 120,
) -> str:
    """Vertical bars, one per day, with the first and last day under them and the peak's
    value above; ``failed`` (if given) is drawn in red from the bottom of each bar."""
    e = html.escape
    top = max(values, default=0) or 1.0
    n = max(len(values), 1)
    step = (WIDTH - 20) / n
    plot = height - 36  # bars between y=16 (under the peak's label) and the baseline
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' {FONT}>",
        f"<line x1='10' y1='{plot + 16}' x2='{WIDTH - 10}' y2='{plot + 16}' stroke='{GREY}'/>",
    ]
    for i, (day, value) in enumerate(zip(days, values, strict=True)):
        h = value / top * plot
        x = 10 + i * step
        tip = f"{day}: {fmt(value)}" + (f", {fmt(failed[i])} failed" if failed else "")
        parts.append(
            f"<rect x='{x + step * 0.1:.1f}' y='{plot + 16 - h:.1f}' width='{step * 0.8:.1f}' "
            f"height='{h:.1f}' fill='{color}'><title>{e(tip)}</title></rect>"
        )
        if failed and failed[i]:
            fh = failed[i] / top * plot
            parts.append(
                f"<rect x='{x + step * 0.1:.1f}' y='{plot + 16 - fh:.1f}' "
                f"width='{step * 0.8:.1f}' height='{fh:.1f}' fill='{RED}'/>"
            )
    parts.append(f"<text x='10' y='{height - 4}'>{e(days[0])}</text>")
    parts.append(f"<text x='{WIDTH - 10}' y='{height - 4}' text-anchor='end'>{e(days[-1])}</text>")
    parts.append(f"<text x='10' y='10'>peak {e(fmt(max(values, default=0)))}</text>")
    return "".join(parts) + "</svg>"


def _cut(label: str, limit: int = 32) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"
