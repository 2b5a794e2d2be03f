"""HTML and text renderings of journal data for notebooks: ``runs()`` and step tables.

Output previews are the journal's own text previews: rendering never imports or unpickles
anything from a run.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from typing import Any

from letitloop.journal._contract import AttemptInfo, Journal, RunInfo
from letitloop.kernel._runtime import resolve_journal

_COLORS = {
    "completed": "#1a7f37",
    "failed": "#cf222e",
    "running": "#0969da",
    "interrupted": "#9a6700",
    "suspended": "#8250df",
    "superseded": "#6e7781",
}


class RunList(list[RunInfo]):
    """A list of runs that renders as a table in Jupyter and as text elsewhere."""

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in ("run", "status", "steps", "cost", "updated"))
        rows = "".join(
            f"<tr><td><code>{html.escape(r.run_id)}</code></td><td>{status_html(r.status)}</td>"
            f"<td>{r.steps_done}</td><td>${r.cost_micros / 1e6:.4f}</td>"
            f"<td>{_ago(r.updated)}</td></tr>"
            for r in self
        )
        return f"<table class='lil-runs'><tr>{head}</tr>{rows}</table>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())

    def text(self) -> str:
        if not self:
            return "no runs"
        width = max(len(r.run_id) for r in self)
        return "\n".join(
            f"{r.run_id:<{width}}  {r.status:<11}  {r.steps_done:>5} steps  {_ago(r.updated)}"
            for r in self
        )


def runs(
    status: str | None = None, *, limit: int = 50, journal: Journal | str | None = None
) -> RunList:
    """The journal's runs, newest first, as a table (``status="suspended"`` to filter)."""
    return RunList(resolve_journal(journal).list_runs(status=status, limit=limit))


def steps_html(attempts: Sequence[AttemptInfo]) -> str:
    """One row per position (its latest attempt), with attempts, duration, cost and preview."""
    latest: dict[int, AttemptInfo] = {}
    counts: dict[int, int] = {}
    for a in attempts:
        latest[a.position] = a
        counts[a.position] = counts.get(a.position, 0) + 1
    head = "".join(
        f"<th>{h}</th>" for h in ("#", "step", "kind", "status", "tries", "ms", "cost", "output")
    )
    rows = []
    for pos, a in sorted(latest.items()):
        ms = f"{(a.ended - a.started) * 1000:.0f}" if a.started and a.ended else "-"
        shown = a.preview if a.preview is not None else (a.error or {}).get("message", "")
        rows.append(
            f"<tr><td>{pos}</td><td>{html.escape(a.name)}</td><td>{a.kind}</td>"
            f"<td>{status_html(a.status)}</td><td>{counts[pos]}</td><td>{ms}</td>"
            f"<td>${a.cost_micros / 1e6:.4f}</td>"
            f"<td><code>{html.escape(_short(shown or ''))}</code></td></tr>"
        )
    return f"<table class='lil-steps'><tr>{head}</tr>{''.join(rows)}</table>"


def status_html(status: str) -> str:
    """A status word in its color."""
    color = _COLORS.get(status, "#57606a")
    return f"<span style='color:{color}'>{html.escape(status)}</span>"


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _ago(ts: float) -> str:
    seconds = max(0.0, time.time() - ts)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit} ago"
    return f"{seconds:.0f}s ago"
