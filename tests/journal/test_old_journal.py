"""A journal written by an earlier version opens with this one and loses nothing.

``tests/data/journal-873c954.tar.gz`` was written by letitloop at commit 873c954 (the code before
the performance work of issue #21), ``journal-44a4c94.tar.gz`` at 44a4c94 (the code before the
restructuring of issue #36) and ``journal-73deee9.tar.gz`` at 73deee9 (main before the second
performance pass of issue #34: folds that insert, lazy openings), the last two by
``tests/data/make_old_journal.py``: a completed run, a failed run with five completed steps, both
folded into DuckDB by a clean stop, and a third run written by a second owner that was then
SIGKILLed (its log segment and DuckDB's WAL as the kill left them). This version must recover
them, replay every journaled step without running it, and continue the failed run where it
stopped.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from letitloop import durable, open_journal, step

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = sorted(DATA.glob("journal-*.tar.gz"))


def _unpack(tmp_path: Path, fixture: Path) -> Path:
    with tarfile.open(fixture) as tar:
        tar.extractall(tmp_path / "old", filter="data")
    keys = Path(os.environ["LIL_KEY_DIR"])
    keys.mkdir(parents=True, exist_ok=True)
    for key in (tmp_path / "old" / "keys").iterdir():  # an upgrade keeps the user's keys
        shutil.copy(key, keys / key.name)
    journal = tmp_path / "journal"
    journal.mkdir()
    for part in ("journal.duckdb", "journal.duckdb.wal", "journal.duckdb.log"):
        shutil.move(str(tmp_path / "old" / part), journal / part)
    return journal / "journal.duckdb"


def _out(i: int) -> dict[str, Any]:
    return {"i": i, "text": f"step {i}"}


def test_every_old_version_has_a_fixture() -> None:
    assert {f.name for f in FIXTURES} >= {
        "journal-873c954.tar.gz",
        "journal-44a4c94.tar.gz",
        "journal-73deee9.tar.gz",
    }


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
def test_a_journal_of_the_previous_version_opens_replays_and_continues(
    tmp_path: Path, fixture: Path
) -> None:
    from tests.conftest import _kill_owner

    path = _unpack(tmp_path, fixture)
    ran: list[int] = []

    def counted(i: int) -> dict[str, Any]:
        ran.append(i)
        return _out(i)

    try:
        runs = {r.run_id.split(":")[-1]: r.status for r in open_journal(path).list_runs()}
        assert runs == {"old-ok": "completed", "old-failed": "failed", "old-unfolded": "completed"}

        @durable(journal=path, run_id="old-ok", name="fixture.flow")
        def ok_flow() -> list[Any]:
            return [step(f"s{i}", counted, i) for i in range(3)]

        @durable(journal=path, run_id="old-unfolded", name="fixture.flow")
        def unfolded() -> list[Any]:  # written by the owner that was killed
            return [step(f"s{i}", counted, i) for i in range(4)]

        @durable(journal=path, run_id="old-failed", name="fixture.flow")
        def failing() -> list[Any]:  # step 5 failed under the old version; it passes now
            return [step(f"s{i}", counted, i) for i in range(6)]

        assert ok_flow() == [_out(i) for i in range(3)]
        assert unfolded() == [_out(i) for i in range(4)]
        assert ran == []  # completed runs answer from the journal
        assert failing() == [_out(i) for i in range(6)]
        assert ran == [5]  # the five journaled steps replayed; only the failed one ran again
        assert open_journal(path).get_run(open_journal(path).find_run("old-failed")).run.status == (
            "completed"
        )
    finally:
        _kill_owner(path)
