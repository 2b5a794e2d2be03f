"""The notebook's side effects in doubt are operate's: the same list as ``operate.doubts`` and
``lil effects list``, on a real journal (DuckDB behind its owner, and PostgreSQL) whose runs
were SIGKILLed inside ``atomic_marker`` blocks by real processes.

Three runs make the rule visible: one killed inside a block (in doubt); one whose block was
killed, resolved as ``redo`` and completed on its next try, then killed inside its next block
(only that one is in doubt); one killed inside a block, then run with edited code that
superseded the block's attempt and killed before reaching it again (nothing is in doubt: the
block's only attempt belongs to code that no longer runs). The notebook's old rule (the last
marker attempt in list order, any status but completed) listed the superseded one too.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from letitloop import open_journal, operate
from letitloop.notebook_ext import EffectsInDoubt
from tests.helpers import child_env, lil_json

HERE = Path(__file__).resolve().parent


@pytest.fixture(params=["duckdb", "postgresql"])
def location(request: pytest.FixtureRequest, journal_path: Path) -> Any:
    """A DuckDB file behind its real owner, or a fresh database on the real PostgreSQL server."""
    return journal_path if request.param == "duckdb" else request.getfixturevalue("pg_dsn")


def _run(journal: Path | str, key: str, plan: str) -> subprocess.CompletedProcess[str]:
    env = child_env(journal, pythonpath=[HERE])
    return subprocess.run(
        [sys.executable, str(HERE / "doubt_workflows.py"), key, plan],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _killed(journal: Path | str, key: str, plan: str) -> None:
    done = _run(journal, key, plan)
    assert done.returncode == -9, (done.returncode, done.stderr)  # a real SIGKILL


def test_the_notebook_lists_what_operate_and_the_cli_list(location: Path | str) -> None:
    _killed(location, "plain", "kill:charge")
    _killed(location, "later", "kill:charge")
    journal = open_journal(location)
    operate.resolve_effect(journal, "nb.doubts:later", "charge", "redo", by="ana@lab")
    _killed(location, "later", "kill:email")  # charge runs again and completes
    _killed(location, "edited", "kill:charge")
    _killed(location, "edited", "v2,kill:prepare")  # the edit supersedes charge's attempt
    assert _run(location, "fine", "").returncode == 0

    later = {a.name: a for a in journal.get_run("nb.doubts:later").attempts if a.kind == "marker"}
    assert later["charge"].status == "completed" and later["charge"].attempt == 2
    edited = [a for a in journal.get_run("nb.doubts:edited").attempts if a.kind == "marker"]
    assert [(a.name, a.status) for a in edited] == [("charge", "superseded")]

    expected = {("nb.doubts:plain", "charge"), ("nb.doubts:later", "email")}
    assert {(d.run_id, d.marker) for d in operate.doubts(journal)} == expected
    panel = EffectsInDoubt(journal=journal)
    labels = [
        row.children[0].children[0].value
        for row in panel.children
        if "lil-effect" in row._dom_classes
    ]
    shown = {m.group(2, 1) for m in (re.match(r"<b>(.*?)</b> · (\S+)", v) for v in labels) if m}
    assert len(labels) == len(shown) == 2 and shown == expected, labels
    listed = lil_json("effects", "list", "--json", journal=location)
    assert {(d["run_id"], d["marker"]) for d in listed} == expected
    # one row per doubt, each with its why: the process stopped inside the block
    assert all(operate.doubts(journal)[0].why in v for v in labels)
