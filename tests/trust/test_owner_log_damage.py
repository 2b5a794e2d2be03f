"""No acknowledged record is silently dropped from a damaged log (issue 14, point 8).

Real owner processes, a real SIGKILL, real bytes flipped in a real segment. The owner folds
into DuckDB only on reads here (``LIL_OWNER_FOLD_DELAY`` large), so the acknowledged steps
live only in the log when it is damaged: on the old owner one flipped byte in the middle of
the last segment was taken for a torn tail and every record after it vanished (the steps ran
again). Now the owner refuses to serve, naming the segment and offset, and
``lil journal doctor --salvage`` keeps every intact record.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import msgpack
import pytest

from letitloop.errors import JournalUnavailableError
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import OwnerJournal
from letitloop.journal.duckdb.owner._log import Log, _frames, frame
from tests.crash.crash_helpers import Worker
from tests.helpers import owner_pid, run_lil, wait_gone

STEPS = 40


def _expected(n: int) -> int:
    acc = 1
    for i in range(n):
        acc = (acc * 7 + i) % 1_000_003
    return acc


def _run(journal_path: Path, tmp_path: Path, side: Path) -> Worker:
    return Worker(
        "steps_worker.py", journal_path, "damage", STEPS, 0, side, stderr_path=tmp_path / "e"
    )


def _crash_after_a_run(journal_path: Path, tmp_path: Path, side: Path, fold: bool = False) -> None:
    """Run the 40-step workflow to its result, then SIGKILL the owner (after a read, which
    folds everything into DuckDB, if ``fold``)."""
    w = _run(journal_path, tmp_path, side)
    assert w.wait_prefix("RESULT", 60), w.diagnostics()
    assert w.finish(30) == 0
    if fold:
        journal = OwnerJournal(journal_path)
        assert journal.stats()["folded_lsn"] > 0
        journal.close()
    pid = owner_pid(JournalPaths(journal_path).pid_file)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid, what=f"the killed owner {pid} to end")


@pytest.mark.timeout(180)
def test_a_flipped_byte_mid_segment_is_refused_then_salvaged(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIL_OWNER_FOLD_DELAY", "3600")
    side = tmp_path / "side"
    _crash_after_a_run(journal_path, tmp_path, side)
    paths = JournalPaths(journal_path)
    (segment,) = sorted(paths.log_dir.iterdir())
    data = bytearray(segment.read_bytes())
    frames = list(_frames(bytes(data)))  # (end offset, payload)
    assert len(frames) > STEPS  # the run's records, none folded yet
    victim_end = frames[10][0]  # the 11th record: flip a byte inside its payload
    victim_start = frames[9][0]
    data[(victim_start + victim_end) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))

    # the owner refuses to serve, naming the segment and the offset
    with pytest.raises(JournalUnavailableError) as caught:
        OwnerJournal(journal_path)
    message = str(caught.value)
    assert str(segment) in message and f"at byte {victim_start}" in message, message
    assert "doctor --salvage" in message
    doctor = run_lil("journal", "doctor", "--journal", str(journal_path))
    assert doctor.returncode == 1 and f"at byte {victim_start}" in doctor.stdout, doctor.stdout

    # salvage keeps every intact record; the completed run returns without running anything
    salvaged = run_lil("journal", "doctor", "--salvage", "--journal", str(journal_path))
    assert f"kept {len(frames) - 1} intact record(s)" in salvaged.stdout, salvaged.stdout
    assert "damaged" in salvaged.stdout and salvaged.returncode == 0, salvaged.stdout
    assert list(paths.root.glob("journal.duckdb.log.damaged-*")), "the damaged log is not kept"
    before = side.read_text()
    w = _run(journal_path, tmp_path, side)
    assert w.wait_prefix("RESULT", 60) == f"RESULT {_expected(STEPS)}", w.diagnostics()
    assert w.finish(30) == 0
    assert side.read_text() == before, "a step of the completed run ran again"
    detail = OwnerJournal(journal_path).get_run("steps:damage")
    assert detail.run.status == "completed"
    assert detail.run.steps_done >= STEPS - 1


@pytest.mark.timeout(120)
def test_a_torn_final_frame_is_cut_and_nothing_acknowledged_is_lost(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half a frame at the end of the last segment (a write torn by the crash): cut, served."""
    monkeypatch.setenv("LIL_OWNER_FOLD_DELAY", "3600")
    side = tmp_path / "side"
    _crash_after_a_run(journal_path, tmp_path, side)
    (segment,) = sorted(JournalPaths(journal_path).log_dir.iterdir())
    torn = frame(msgpack.packb({"k": "step", "run": "steps:damage"}))
    with open(segment, "ab") as f:
        f.write(torn[: len(torn) // 2])
    journal = OwnerJournal(journal_path)
    try:
        assert journal.stats()["torn_tails_cut"] == 1
        detail = journal.get_run("steps:damage")
        assert detail.run.status == "completed" and detail.run.steps_done == STEPS
    finally:
        journal.close()


@pytest.mark.timeout(120)
def test_a_deleted_log_directory_after_a_crash_is_reported(
    journal_path: Path, tmp_path: Path
) -> None:
    """The log directory is deleted after a crash: the owner refuses (DuckDB's fold watermark
    says records were there); salvage starts a fresh log and says so; the journal works."""
    side = tmp_path / "side"
    _crash_after_a_run(journal_path, tmp_path, side, fold=True)
    paths = JournalPaths(journal_path)
    shutil.rmtree(paths.log_dir)
    with pytest.raises(JournalUnavailableError, match="the log is gone"):
        OwnerJournal(journal_path)
    salvaged = run_lil("journal", "doctor", "--salvage", "--journal", str(journal_path))
    assert "the log is gone" in salvaged.stdout and salvaged.returncode == 0, salvaged.stdout
    journal = OwnerJournal(journal_path)
    try:
        assert journal.get_run("steps:damage").run.status == "completed"
    finally:
        journal.close()


@pytest.mark.timeout(120)
def test_a_segment_truncated_below_the_fold_watermark_is_reported(
    journal_path: Path, tmp_path: Path
) -> None:
    """Folded records, then the segment is cut to half after a crash: refused, not ignored."""
    _crash_after_a_run(journal_path, tmp_path, tmp_path / "side", fold=True)
    import duckdb

    db = duckdb.connect(str(journal_path), read_only=True)
    (folded,) = db.execute("SELECT folded_lsn FROM fold_state").fetchone()  # type: ignore[misc]
    db.close()
    (segment,) = sorted(JournalPaths(journal_path).log_dir.iterdir())
    os.truncate(segment, segment.stat().st_size // 2)
    with pytest.raises(JournalUnavailableError, match="cut short") as caught:
        OwnerJournal(journal_path)
    assert str(folded) in str(caught.value)


def test_log_scan_tells_corruption_from_a_torn_tail(tmp_path: Path) -> None:
    """Unit level: damage with intact frames after it is damage (wherever it is); a damaged
    final frame alone is a torn tail; the intact frames after damage are all found."""
    log = Log(tmp_path / "log")
    log.recover(0)
    payloads = [msgpack.packb({"k": "x", "i": i}) for i in range(6)]
    log.append(b"".join(frame(p) for p in payloads))
    log.close()
    (segment,) = sorted((tmp_path / "log").iterdir())
    good = segment.read_bytes()
    second = len(frame(payloads[0]))
    bad = bytearray(good)
    bad[second + 9] ^= 0x55  # inside the second frame's payload
    segment.write_bytes(bytes(bad))
    scan = Log(tmp_path / "log").scan(0)
    assert [d.offset for d in scan.damage] == [second] and scan.torn is None
    assert [p for _, p in scan.records] == [payloads[0], *payloads[2:]]
    segment.write_bytes(good[:-3])
    scan = Log(tmp_path / "log").scan(0)
    assert not scan.damage and scan.torn is not None
    assert [p for _, p in scan.records] == payloads[:5]
