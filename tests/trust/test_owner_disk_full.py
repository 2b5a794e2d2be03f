"""A full disk is said plainly and loses nothing acknowledged (issue 14, point 9).

A real tmpfs of 32 MiB is mounted for the test (as root) and unmounted after it; a filler file
takes most of it. A workflow of 100 KB steps runs until the disk is full: the step that does
not fit fails with ``DiskFullError`` naming the journal's path (on the old owner the workflow
died with DuckDB's "cannot rollback - no transaction is active" in an owner traceback). Once
the filler is deleted, calling the workflow again finishes it: no acknowledged step runs again,
and the journal holds every step.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from letitloop.journal.duckdb._client import OwnerJournal
from tests.conftest import _kill_owner
from tests.crash.crash_helpers import Worker

STEPS, SIZE = 200, 100_000


@pytest.fixture
def small_disk() -> Iterator[Path]:
    mount = Path(tempfile.mkdtemp(prefix="lil-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        _kill_owner(mount / "journal.duckdb")
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()


def _indices(lines: list[str], prefix: str) -> set[int]:
    return {int(x.split()[1]) for x in lines if x.startswith(prefix + " ")}


@pytest.mark.timeout(180)
def test_a_full_disk_names_the_path_and_work_continues_once_space_is_freed(
    small_disk: Path, tmp_path: Path
) -> None:
    journal = small_disk / "journal.duckdb"
    filler = small_disk / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M", "count=20"], check=True)
    first = Worker("big_steps_worker.py", journal, STEPS, SIZE, stderr_path=tmp_path / "e1")
    line = first.wait_for(lambda x: x.startswith(("ERROR", "RESULT")), 120)
    assert first.finish(30) != 0, first.diagnostics()
    assert line is not None, first.diagnostics()
    # the write that did not fit says so (DiskFullError); if DuckDB's fold met the full disk
    # first, the owner's own last words say it, and the client shows them
    assert line.startswith(("ERROR DiskFullError", "ERROR JournalUnavailableError")), line
    assert "no space left on the device holding the journal" in line, line
    assert str(small_disk) in line and "cannot rollback" not in line, line
    acked = _indices(first.snapshot(), "S")
    assert 20 < len(acked) < STEPS, f"{len(acked)} steps acknowledged before the disk filled"

    filler.unlink()
    second = Worker("big_steps_worker.py", journal, STEPS, SIZE, stderr_path=tmp_path / "e2")
    assert second.wait_prefix("RESULT", 120) == f"RESULT {STEPS * (SIZE + 8)}", second.diagnostics()
    assert second.finish(30) == 0
    again = _indices(second.snapshot(), "EXEC")
    assert not again & acked, f"acknowledged steps ran again: {sorted(again & acked)[:10]}"
    assert acked | again == set(range(STEPS))
    client = OwnerJournal(journal)
    try:
        run = client.get_run("big:big").run
        assert run.status == "completed" and run.steps_done == STEPS
    finally:
        client.close()
