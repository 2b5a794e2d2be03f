"""HTML and text renderings of journal data for notebooks: ``runs()``, status words and
decisions.

Runs are operate's summaries (``operate.list_summaries``: steps done out of known, the time the
run's tries really ran, cost), written with operate's formatting, so a notebook's table reads
as ``lil runs list`` and the lab do. Rendering never imports or unpickles anything from a run.
"""

from __future__ import annotations

import html
import os
from typing import Any

from letitloop import operate
from letitloop.journal import ApprovalInfo, Journal
from letitloop.notebook_ext._base import journal_of

_COLORS = {
    "completed": "#1a7f37",
    "failed": "#cf222e",
    "running": "#0969da",
    "interrupted": "#9a6700",
    "suspended": "#8250df",
    "superseded": "#6e7781",
    "cancelled": "#6e7781",
}
_HEAD = ("run", "status", "steps", "ran", "cost", "updated")


class RunList(list[operate.RunSummary]):
    """A list of runs that renders as a table in Jupyter and as text elsewhere."""

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in _HEAD)
        rows = []
        for r in self:
            shown = operate.shown(r)
            rows.append(
                f"<tr><td><code>{html.escape(r.run_id)}</code></td>"
                f"<td>{status_html(r.status)}</td><td>{shown['steps']}</td>"
                f"<td>{shown['duration']}</td><td>{shown['cost']}</td>"
                f"<td>{operate.ago(r.updated)}</td></tr>"
            )
        return f"<table class='lil-runs'><tr>{head}</tr>{''.join(rows)}</table>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text())

    def text(self) -> str:
        if not self:
            return "no runs"
        width = max(len(r.run_id) for r in self)
        lines = []
        for r in self:
            shown = operate.shown(r)
            lines.append(
                f"{r.run_id:<{width}}  {r.status:<11}  {shown['steps']:>7} steps  "
                f"{shown['duration']:>7}  {shown['cost']:>9}  {operate.ago(r.updated)}"
            )
        return "\n".join(lines)


def runs(
    status: str | None = None,
    *,
    limit: int = 50,
    journal: Journal | str | os.PathLike[str] | None = None,
) -> RunList:
    """The journal's runs, newest first, as a table (``status="suspended"`` to filter)."""
    return RunList(operate.list_summaries(journal_of(journal), status=status, limit=limit))


def status_html(status: str) -> str:
    """A status word in its color."""
    color = _COLORS.get(status.split(" ")[0], "#57606a")
    return f"<span style='color:{color}'>{html.escape(status)}</span>"


def decision_text(d: ApprovalInfo) -> str:
    """``approved by ana@host at 2026-12-01 21:04:05: ship it`` (or pending)."""
    if d.status == "pending":
        return "pending: waiting for a decision"
    how = " (timed out)" if d.timed_out else ""
    when = f" at {operate.local_time(d.decided_at)}" if d.decided_at else ""
    note = f": {d.comment}" if d.comment else ""
    return f"{d.status} by {d.decided_by or '?'}{when}{how}{note}"
