"""The widgets' Python side, driven by clicking their buttons in-process (``Button.click()``)."""

from __future__ import annotations

from typing import Any

import pytest

from letitloop import atomic_marker, durable, open_journal
from letitloop.notebook_ext import ApprovalWidget, EffectsInDoubt, RunInspector, runs

APPROVAL_CELL = """
draft = step("draft", lambda: calls.append("draft") or {"title": "Hello"})
decision = approval("publish", draft, schema={"type": "object", "required": ["title"]})
if decision.approved:
    step("publish", lambda p: calls.append(("publish", p["title"])), decision.payload)
decision.approved
"""


def test_approve_button_records_the_decision_and_continues_the_run(cells: Any, shell: Any) -> None:
    first = cells.run("post", APPROVAL_CELL)
    widget = first.result
    assert isinstance(widget, ApprovalWidget) and widget.row.status == "pending"
    assert "lil approvals approve" in repr(widget)
    journal = open_journal(cells.journal_path)
    run_id = widget.row.run_id
    assert journal.get_run(run_id).run.status == "suspended"
    widget.edit.value = '{"title": "Hi!"}'
    widget.comment.value = "shorter"
    widget.approve.click()
    assert widget.approve.disabled and widget.reject.disabled
    assert "approved" in widget.status.value and "shorter" in widget.status.value
    assert journal.get_run(run_id).run.status == "completed", widget.output.outputs
    assert cells.calls == ["draft", ("publish", "Hi!")]
    assert shell.user_ns["decision"].approved and shell.user_ns["decision"].comment == "shorter"
    again = cells.run("post", APPROVAL_CELL)  # after a restart: replays, nothing pending
    assert again.result is True and cells.calls == ["draft", ("publish", "Hi!")]


def test_reject_and_an_invalid_edit(cells: Any, shell: Any) -> None:
    widget = cells.run("post2", APPROVAL_CELL).result
    widget.edit.value = "{not json"
    widget.approve.click()
    assert "not valid JSON" in widget.status.value and not widget.approve.disabled
    widget.edit.value = '{"other": 1}'
    widget.approve.click()
    assert "is a required property" in widget.status.value
    widget.reject.click()
    assert "rejected" in widget.status.value and shell.user_ns["decision"].approved is False
    assert cells.calls == ["draft"]


def test_a_decision_made_elsewhere_is_picked_up(cells: Any, shell: Any) -> None:
    widget = cells.run("post3", APPROVAL_CELL).result
    journal = open_journal(cells.journal_path)
    journal.decide_approval(widget.row.id, approved=True, by="cli@elsewhere")
    widget._refresh()  # what the pushed event schedules on the kernel's loop
    assert widget.approve.disabled and "cli@elsewhere" in widget.status.value
    assert shell.user_ns["decision"].by == "cli@elsewhere"
    assert cells.calls == ["draft", ("publish", "Hello")]


def test_effects_in_doubt_resolve_buttons(journal_path: Any) -> None:
    journal = open_journal(journal_path)
    sent: list[int] = []

    @durable(journal=journal, run_id="m1", name="mailer")
    def mailer(fail: bool) -> str:
        with atomic_marker("send") as go:
            if go:
                sent.append(1)
                if fail:
                    raise RuntimeError("smtp timeout after sending?")
        return "ok"

    with pytest.raises(RuntimeError):
        mailer(True)
    panel = EffectsInDoubt(journal=journal)
    rows = [c for c in panel.children if "lil-effect" in c._dom_classes]
    assert len(rows) == 1 and "send" in rows[0].children[0].children[0].value
    rows[0].children[0].children[1].click()  # Done: it happened (asked first)
    rows[0].children[1].confirm.click()
    assert "no side effects in doubt" in panel.children[0].value
    assert mailer(True) == "ok" and sent == [1]


def test_run_inspector_and_runs_table(journal_path: Any) -> None:
    journal = open_journal(journal_path)

    @durable(journal=journal, run_id="i1", name="inspect")
    def work() -> int:
        from letitloop import step

        return step("one", lambda: 1) + step("two", lambda: 2)

    work()
    inspector = RunInspector("i1", journal=journal)
    assert "completed" in inspector.header.value and "2/2 steps done" in inspector.header.value
    assert [r.children[0].description for r in inspector.rows.children] == ["0 one", "1 two"]
    table = runs(journal=journal)
    assert "inspect:i1" in table._repr_html_() and "inspect:i1" in table.text()
    inspector.close()
