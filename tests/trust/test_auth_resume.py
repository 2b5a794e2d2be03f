"""Point 11 of issue 14: resume imports only an authenticated entry point.

``lil runs resume`` (and the TUI's and the editor's resume, which call the same
``resume_run``) imports the module a run's ``runs.entry`` names, which executes it. Before the
fix, whoever could write the journal file (or any other client of the owner) chose what ran.
Now the entry point carries an HMAC under the journal's key, and the owner refuses a ``run``
record from a client that does not hold the run's lease. Real owner, real DuckDB file.
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from letitloop.errors import RunLockedError, TamperedDataError
from letitloop.journal.duckdb._client import OwnerJournal, open_journal, stop_owner
from letitloop.kernel._resume import resume_run
from tests.helpers import invoke_lil

WORKFLOW = """
from pathlib import Path
from letitloop import durable, step

GATE = Path({gate!r})

@durable(run_id="invoice-9")
def invoice(n: int) -> int:
    a = step("a", lambda: n + 1)
    if not GATE.exists():
        raise RuntimeError("not yet")
    return step("b", lambda: a * 10)
"""

EVIL = """
from pathlib import Path
Path({pwned!r}).write_text("owned")
def main(*a, **k):
    return "evil"
"""


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    mods = tmp_path / "mods"
    mods.mkdir()
    paths = {"gate": tmp_path / "gate", "pwned": tmp_path / "pwned"}
    (mods / "trust_invoice.py").write_text(
        textwrap.dedent(WORKFLOW.format(gate=str(paths["gate"])))
    )
    (mods / "trust_evil.py").write_text(textwrap.dedent(EVIL.format(pwned=str(paths["pwned"]))))
    monkeypatch.syspath_prepend(str(mods))
    for name in ("trust_invoice", "trust_evil"):
        sys.modules.pop(name, None)
    return paths


def _failed_run(journal_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    import trust_invoice  # type: ignore[import-not-found]

    with pytest.raises(RuntimeError):
        trust_invoice.invoice(4)
    (info,) = open_journal(journal_path).list_runs()
    return info.run_id


def test_an_authenticated_entry_resumes(
    journal_path: Path, modules: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _failed_run(journal_path, monkeypatch)
    modules["gate"].write_text("open")
    assert resume_run(open_journal(journal_path), run_id) == 50
    detail = open_journal(journal_path).get_run(run_id)
    assert detail.entry is not None and "|hmac=" in detail.entry


@pytest.mark.parametrize("what", ["entry", "args"])
def test_a_tampered_entry_or_arguments_are_never_imported(
    journal_path: Path, modules: dict[str, Path], monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    run_id = _failed_run(journal_path, monkeypatch)
    stop_owner(journal_path)
    db = duckdb.connect(str(journal_path))  # whoever can write the file, with no key
    if what == "entry":
        db.execute("UPDATE runs SET entry = 'trust_evil:main' WHERE run_id = ?", [run_id])
    else:
        db.execute("UPDATE runs SET args = '[[400], {}]'::BLOB WHERE run_id = ?", [run_id])
    db.close()
    modules["gate"].write_text("open")
    with pytest.raises(TamperedDataError, match="not authenticated"):
        resume_run(open_journal(journal_path), run_id)
    res = invoke_lil("runs", "resume", run_id, journal=journal_path)
    assert res.exit_code != 0 and "not authenticated" in res.output
    assert "Traceback" not in res.output
    assert not modules["pwned"].exists(), "the tampered entry point was imported"


def _run_record(run_id: str, entry: str) -> dict[str, Any]:
    return {"k": "run", "run": run_id, "wf": "trust_invoice.invoice", "key": "invoice-9"} | {
        "epoch": 0,
        "try": 9,
        "args": ["json", b"[[4], {}]"],
        "entry": entry,
        "parent": None,
        "by": "mallory@elsewhere",
        "ts": time.time(),
    }


def test_another_client_cannot_overwrite_a_runs_header(
    journal_path: Path, modules: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _failed_run(journal_path, monkeypatch)
    other = OwnerJournal(journal_path)  # a second session: another process as the owner sees it
    try:
        with pytest.raises(RunLockedError, match="does not hold run"):
            other.append([_run_record(run_id, "trust_evil:main")])
        # also while the run is held by someone else
        before = open_journal(journal_path).get_run(run_id)
        state = open_journal(journal_path).open_run(
            run_id=run_id,
            workflow="trust_invoice.invoice",
            key="invoice-9",
            args=before.args,
            entry=before.entry,
        )
        assert state.status == "running"
        with pytest.raises(RunLockedError):
            other.append([_run_record(run_id, "trust_evil:main")])
        open_journal(journal_path).release_run(run_id)
    finally:
        other.close()
    detail = open_journal(journal_path).get_run(run_id)
    assert detail.entry is not None and detail.entry.startswith("trust_invoice:invoice")
    modules["gate"].write_text("open")
    assert resume_run(open_journal(journal_path), run_id) == 50
    assert not modules["pwned"].exists()
