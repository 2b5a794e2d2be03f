"""Progress tells the truth: a decided approval counts toward done like a step (a completed run
with one step and one approval showed ``1/2 steps``)."""

from __future__ import annotations

from typing import Any

from letitloop import open_journal

CELL = """
draft = step("draft", lambda: calls.append("draft") or "text")
decision = approval("publish", {"draft": draft})
decision.approved
"""


def test_a_decided_approval_counts_as_done(cells: Any, shell: Any) -> None:
    cells.run("publish_cell", CELL)  # suspends with the approval's widget
    journal = open_journal(cells.journal_path)
    (pending,) = journal.approvals(status="pending")
    journal.decide_approval(pending.id, approved=True, by="ana@laptop")
    again = cells.run("publish_cell", CELL)
    assert again.success and shell.user_ns["decision"].approved
    # was "1/2 steps": the approval decided since the first run now counts as done
    assert "publish_cell: 2/2 steps · 1 replayed" in again.captured.stdout, again.captured.stdout
    assert cells.calls == ["draft"]
