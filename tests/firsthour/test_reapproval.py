"""Point 2: an approval asked again after an edited cell (a rewind) can be decided, every way."""

from __future__ import annotations

from typing import Any

import pytest

from letitloop import ApprovalPending, approval, durable, step


def cell(journal: Any, draft: str) -> Any:
    """A notebook cell as ``%%durable`` runs it: reopened, rerun from the first changed step."""

    @durable(journal=journal, run_id="cell", name="nb", on_change="rerun", reopen=True)
    def run() -> Any:
        text = step("draft", str, draft)  # the input changed: the step reruns
        return approval("publish", {"text": text}, wait=False)

    return run


def ask_twice(journal: Any) -> Any:
    """Approve the first request, edit the earlier step, and return the new pending request."""
    with pytest.raises(ApprovalPending):
        cell(journal, "v1")()
    first = journal.approvals(status="pending")[0]
    journal.decide_approval(first.id, approved=True, by="ana")
    assert cell(journal, "v1")().approved
    with pytest.raises(ApprovalPending):
        cell(journal, "v2")()  # the draft step changed: the approval is asked again
    pending = journal.approvals(status="pending")
    assert len(pending) == 1 and pending[0].id != first.id
    assert pending[0].payload == {"text": "v2"}
    return pending[0]


def test_decide_approval_works_on_the_new_request(any_journal: Any) -> None:
    again = ask_twice(any_journal)
    any_journal.decide_approval(again.id, approved=False, by="bo", comment="not yet")
    row = next(r for r in any_journal.approvals() if r.id == again.id)
    assert (row.status, row.decided_by, row.comment) == ("rejected", "bo", "not yet")
    decision = cell(any_journal, "v2")()
    assert (decision.approved, decision.by, decision.payload) == (False, "bo", {"text": "v2"})


def test_the_new_request_is_decided_by_a_second_journal_client(any_journal: Any) -> None:
    """Another process (the CLI, the widget) deciding through its own journal object."""
    again = ask_twice(any_journal)
    other = _other_client(any_journal)
    other.decide_approval(again.id, approved=True, by="cli-user")
    assert cell(any_journal, "v2")().by == "cli-user"


def _other_client(journal: Any) -> Any:
    if journal.location == ":memory:":
        from letitloop.journal._memory import MemoryJournal

        return MemoryJournal(journal.store)
    from letitloop.journal.duckdb._client import open_journal

    return open_journal(journal.location)
