"""Splice proposals end to end through the real journal: propose, apply, conflict, reject."""

from __future__ import annotations

from pathlib import Path

import pytest

from letitloop import durable, step
from letitloop.journal.duckdb._client import open_journal
from letitloop.splice import (
    ProposalConflictError,
    SpliceError,
    apply_proposal,
    get_proposal,
    propose_splice,
    reject_proposal,
)
from tests.helpers import as_json, invoke_lil

APP = """\
# billing.py -- keep this header
import math


def total(items):
    # sum the prices
    return sum(items)


def tax(amount):
    return amount * 0.2
"""
NEW_TOTAL = (
    "def total(items):\n    # sum the prices, rounded to cents\n    return round(sum(items), 2)\n"
)


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "billing.py"
    path.write_text(APP)
    return path


def test_agent_proposes_person_applies_through_the_cli(app: Path, journal_path: Path) -> None:
    @durable(journal=journal_path, run_id="agent")
    def agent() -> str:
        return step("propose", lambda: propose_splice(app, "total", NEW_TOTAL, reason="cents").id)

    pid = agent()
    journal = open_journal(journal_path)
    proposal = get_proposal(pid, journal=journal)
    assert proposal.state == "pending" and proposal.origin and proposal.origin.endswith(":agent")
    assert app.read_text() == APP  # proposing changes nothing

    # meanwhile someone edits another part of the file: the proposal still applies
    app.write_text(APP.replace("0.2", "0.25"))
    listed = as_json(invoke_lil("splice", "list", "--json", journal=journal_path))
    assert [p["id"] for p in listed] == [pid]
    shown = invoke_lil("splice", "show", pid[:6], journal=journal_path)
    assert "round(sum(items), 2)" in shown.output
    applied = invoke_lil("splice", "apply", pid[:6], journal=journal_path)
    assert applied.exit_code == 0, applied.output
    expected = APP.replace("0.2", "0.25").replace(
        "    # sum the prices\n    return sum(items)\n",
        "    # sum the prices, rounded to cents\n    return round(sum(items), 2)\n",
    )
    assert app.read_text() == expected  # only the target changed, header and tax edit kept
    done = get_proposal(pid, journal=journal)
    assert done.state == "applied" and done.decided_by and done.decided_at
    again = invoke_lil("splice", "apply", pid, journal=journal_path)
    assert again.exit_code == 1 and "already applied by" in again.output


def test_changed_target_is_a_conflict_with_both_versions(app: Path, journal_path: Path) -> None:
    journal = open_journal(journal_path)
    proposal = propose_splice(app, "total", NEW_TOTAL, journal=journal)
    edited = APP.replace("return sum(items)", "return sum(items) or 0")
    app.write_text(edited)
    with pytest.raises(ProposalConflictError) as err:
        apply_proposal(proposal.id, by="reviewer", journal=journal)
    assert "return sum(items) or 0" in str(err.value) and "round(sum(items), 2)" in str(err.value)
    assert app.read_text() == edited  # nothing written
    conflict = get_proposal(proposal.id, journal=journal)
    assert conflict.state == "conflict" and "or 0" in (conflict.note or "")


def test_reject_and_bad_proposals(app: Path, memory_journal) -> None:  # type: ignore[no-untyped-def]
    proposal = propose_splice(
        app, "tax", "def tax(amount):\n    return 0\n", journal=memory_journal
    )
    rejected = reject_proposal(proposal.id, by="me", comment="no", journal=memory_journal)
    assert (rejected.state, rejected.decided_by, rejected.note) == ("rejected", "me", "no")
    with pytest.raises(SpliceError, match="already rejected by me"):
        apply_proposal(proposal.id, journal=memory_journal)
    with pytest.raises(SpliceError):
        propose_splice(app, "nope", "def nope():\n    pass\n", journal=memory_journal)
    with pytest.raises(SpliceError):
        propose_splice(app, "tax", "def tax(:\n", journal=memory_journal)
    assert len(memory_journal.proposals()) == 1  # the bad ones were never recorded
