"""Splice proposals on a PostgreSQL journal, through the library's own defaults and through
operate's actions: proposed, listed, applied and rejected with ``LIL_JOURNAL`` a
``postgresql://`` URL and no journal given (the splicer fell back to a DuckDB journal and
refused the URL; an apply or reject looked for a lock file in a folder named ``postgresql:``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from letitloop import operate
from letitloop.journal import open_journal
from letitloop.splice import (
    SpliceError,
    apply_proposal,
    get_proposal,
    list_proposals,
    propose_splice,
    reject_proposal,
)
from tests.splice.test_proposals import APP, NEW_TOTAL


def test_proposals_on_postgresql_by_default(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIL_JOURNAL", pg_dsn)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    app = tmp_path / "billing.py"
    app.write_text(APP)
    total = propose_splice(app, "total", NEW_TOTAL, reason="cents", by="agent")
    tax = propose_splice(app, "tax", "def tax(amount):\n    return 0\n", by="agent")
    journal = open_journal(pg_dsn)
    assert [(p.id, p.state) for p in journal.proposals()] == [
        (total.id, "pending"),
        (tax.id, "pending"),
    ]
    assert [p.id for p in list_proposals("pending")] == [total.id, tax.id]
    apply_proposal(total.id[:6], by="ana@lab", comment="ok")
    assert "round(sum(items), 2)" in app.read_text()
    assert get_proposal(total.id).state == "applied"
    with pytest.raises(SpliceError, match="already applied by ana@lab"):
        apply_proposal(total.id)
    rejected = reject_proposal(tax.id, by="ana@lab", comment="keep the tax")
    assert (rejected.state, rejected.note) == ("rejected", "keep the tax")
    assert "amount * 0.2" in app.read_text()
    assert not (tmp_path / ".letitloop").exists()  # no DuckDB journal made beside it
    lock = tmp_path / "cache" / "letitloop" / "locks" / f"splice-{journal.journal_id}.lock"
    assert lock.exists() and lock.stat().st_mode & 0o077 == 0  # private to its user
    assert not (tmp_path / "postgresql:").exists()


def test_operate_applies_and_rejects_on_postgresql(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    journal = open_journal(pg_dsn)
    app = tmp_path / "billing.py"
    app.write_text(APP)
    total = propose_splice(app, "total", NEW_TOTAL, journal=journal)
    tax = propose_splice(app, "tax", "def tax(amount):\n    return 0\n", journal=journal)
    done = operate.apply_splice(journal, total.id, by="ana@lab")
    assert (done.action, done.data["state"]) == ("apply", "applied")
    assert "round(sum(items), 2)" in app.read_text()
    no = operate.reject_splice(journal, tax.id, by="ana@lab", comment="keep it")
    assert (no.action, no.data["state"]) == ("reject", "rejected")
    shapes = {p["id"]: p for p in map(operate.proposal_json, journal.proposals())}
    assert shapes[total.id]["state"] == "applied" and shapes[tax.id]["note"] == "keep it"
