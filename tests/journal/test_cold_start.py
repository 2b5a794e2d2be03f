"""The owner's warm start (``journal/duckdb/owner/_warm.py``): after a clean stop, the next owner
answers a resume from its snapshot before DuckDB is loaded, never trusts a snapshot that is
damaged, forged, foreign or stale, and loses nothing acknowledged when SIGKILLed at any point
of its start-up or while DuckDB loads. Real owner processes, real workers, real SIGKILLs."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import stop_owner
from letitloop.journal.duckdb.owner import _warm
from tests.crash.crash_helpers import Worker, read_lines
from tests.helpers import owner_pid, owner_pids, pid_alive, wait_gone, wait_until


def expected(n: int) -> int:
    """What steps_worker.py returns for ``n`` steps."""
    acc = 1
    for i in range(n):
        acc = (acc * 7 + i) % 1_000_003
    return acc


def _worker(journal: Path, side: Path, tmp: Path, steps: int, sleep: float = 0.0) -> Worker:
    return Worker(
        "steps_worker.py", journal, "warm-run", steps, sleep, side, stderr_path=tmp / "w.err"
    )


def _interrupted_run(journal: Path, side: Path, tmp: Path, steps: int, done: int) -> set[int]:
    """A run SIGKILLed after ``done`` acknowledged steps, then a clean stop of the owner: what
    the next owner finds is a snapshot holding that unfinished run."""
    w = _worker(journal, side, tmp, steps, 0.02)
    try:
        assert w.wait_prefix(f"S {done - 1}", 120) is not None, w.diagnostics()
        assert w.sigkill()
    finally:
        w.kill()
    acked = {int(line.split()[1]) for line in w.snapshot() if line.startswith("S ")}
    assert stop_owner(journal) is not None
    assert _warm.path_of(JournalPaths(journal)).exists()
    return acked


def _ready_stats(journal: Path) -> dict[str, object]:
    """What the newest owner said when it began serving (its READY line)."""
    lines = JournalPaths(journal).owner_log.read_text().splitlines()
    ready = [line for line in lines if line.startswith("READY ")]
    return dict(json.loads(ready[-1][len("READY ") :]))


def _duckdb_loaded(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as f:
        return "_duckdb" in f.read()


def _finish(journal: Path, side: Path, tmp: Path, steps: int) -> list[int]:
    """Run the workflow to its end; the step indexes it executed."""
    before = len(read_lines(side))
    w = _worker(journal, side, tmp, steps)
    try:
        assert w.finish(180) == 0, w.diagnostics()
    finally:
        w.kill()
    assert f"RESULT {expected(steps)}" in w.snapshot(), w.diagnostics()
    return [int(line.split()[0]) for line in read_lines(side)[before:]]


@pytest.fixture
def hold_duckdb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Owners started from here on open DuckDB only when a request needs it."""
    monkeypatch.setenv("LIL_OWNER_WARM_QUIET", "120")
    monkeypatch.setenv("LIL_OWNER_WARM_MAX", "120")


def test_a_resume_after_a_clean_stop_is_answered_before_duckdb_loads(
    journal_path: Path, tmp_path: Path, hold_duckdb: None
) -> None:
    side = tmp_path / "side"
    acked = _interrupted_run(journal_path, side, tmp_path, 40, 15)
    ran = _finish(journal_path, side, tmp_path, 40)  # resumed and finished from the snapshot
    assert not acked & set(ran), "an acknowledged step ran again"
    assert set(ran) | acked == set(range(40))
    paths = JournalPaths(journal_path)
    pid = owner_pid(paths.pid_file)
    assert pid is not None and pid_alive(pid)
    assert _ready_stats(journal_path)["warm"] == "1 runs"
    assert not _duckdb_loaded(pid), "the owner loaded DuckDB before answering the resume"
    assert not _warm.path_of(paths).exists(), "a snapshot is used once"

    from letitloop.journal.duckdb._client import open_journal

    detail = open_journal(journal_path).get_run("steps:warm-run")  # a read: DuckDB opens for it
    assert detail.run.status == "completed" and len(detail.attempts) >= 40
    assert _duckdb_loaded(pid)
    assert "DUCKDB open in" in paths.owner_log.read_text()
    assert _finish(journal_path, side, tmp_path, 40) == []  # completed: returns the result


def test_acknowledged_writes_survive_a_sigkill_before_duckdb_loads(
    journal_path: Path, tmp_path: Path, hold_duckdb: None
) -> None:
    side = tmp_path / "side"
    _interrupted_run(journal_path, side, tmp_path, 30, 10)
    _finish(journal_path, side, tmp_path, 30)  # every step and the result acknowledged
    paths = JournalPaths(journal_path)
    pid = owner_pid(paths.pid_file)
    assert pid is not None and not _duckdb_loaded(pid)
    os.kill(pid, signal.SIGKILL)  # nothing of it is in DuckDB: all of it is in the log only
    wait_gone(pid, what=f"the killed owner {pid} to end")
    assert not _warm.path_of(paths).exists()
    assert _finish(journal_path, side, tmp_path, 30) == []  # nothing ran again
    stats = _ready_stats(journal_path)
    assert stats["warm"] == "none" and int(str(stats["replayed"])) > 0


def test_sigkill_at_any_point_of_a_warm_start_loses_nothing_acknowledged(
    journal_path: Path, tmp_path: Path
) -> None:
    """Each round: a clean stop (a snapshot), a worker resumes the run, and its owner is
    SIGKILLed after a random delay: while starting, while serving from the snapshot, while
    DuckDB loads or after. No step acknowledged in a round may run in a later one."""
    side = tmp_path / "side"
    steps = 400
    rng = random.Random(21)
    acked_before: set[int] = set()
    _interrupted_run(journal_path, side, tmp_path, steps, 5)
    for delay in [0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.9, rng.uniform(0, 0.5)]:
        before = len(read_lines(side))
        w = _worker(journal_path, side, tmp_path, steps, 0.002)
        try:
            time.sleep(delay)
            killed = []
            wait_until(lambda: owner_pids(journal_path), 60, what="an owner", interval=0.005)
            for pid in owner_pids(journal_path):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            wait_until(
                lambda: not any(map(pid_alive, killed)),  # noqa: B023
                10,
                what=f"the killed owners {killed} to end",
                interval=0.005,
            )
            w.wait_for(lambda line: line.startswith("S "), 30)  # it goes on with a new owner
            w.sigkill()
        finally:
            w.kill()
        ran = {int(line.split()[0]) for line in read_lines(side)[before:]}
        assert not ran & acked_before, f"acknowledged steps ran again: {ran & acked_before}"
        acked_before |= {int(line.split()[1]) for line in w.snapshot() if line.startswith("S ")}
        stop_owner(journal_path)  # a clean stop: the next round starts warm
    ran_last = set(_finish(journal_path, side, tmp_path, steps))
    assert not ran_last & acked_before


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["byte", "forged", "truncated"])
def test_a_damaged_or_forged_snapshot_is_ignored(
    journal_path: Path, tmp_path: Path, damage: str
) -> None:
    side = tmp_path / "side"
    acked = _interrupted_run(journal_path, side, tmp_path, 30, 10)
    snap = _warm.path_of(JournalPaths(journal_path))
    if damage == "byte":
        _flip(snap, len(snap.read_bytes()) - 40)  # inside a step row
    elif damage == "truncated":
        snap.write_bytes(snap.read_bytes()[:60])
    else:  # a well-formed snapshot under another key, claiming no run was ever started
        data = snap.read_bytes()
        n = len(_warm.MAGIC) + _warm._ID_LEN.size
        (id_len,) = _warm._ID_LEN.unpack_from(data, len(_warm.MAGIC))
        journal_id = data[n : n + id_len].decode()
        import msgpack

        head, _runs = msgpack.unpackb(data[n + id_len + 32 :])
        snap.write_bytes(
            _warm.encode(
                JournalPaths(journal_path), os.urandom(32), journal_id, 1, head["folded_lsn"], []
            )
        )
    ran = _finish(journal_path, side, tmp_path, 30)
    assert not acked & set(ran)
    assert _ready_stats(journal_path)["warm"] in (
        "bad MAC (damaged or not written with this journal's key)",
        "truncated",
    )


def test_a_stale_or_foreign_snapshot_is_ignored(journal_path: Path, tmp_path: Path) -> None:
    side = tmp_path / "side"
    paths = JournalPaths(journal_path)
    acked = _interrupted_run(journal_path, side, tmp_path, 30, 5)
    old = _warm.path_of(paths).read_bytes()  # the snapshot of 5 steps
    w = _worker(journal_path, side, tmp_path, 30, 0.02)  # the next owner takes it, then more
    try:
        assert w.wait_prefix("S 15", 120) is not None, w.diagnostics()
        assert w.sigkill()
    finally:
        w.kill()
    acked |= {int(line.split()[1]) for line in w.snapshot() if line.startswith("S ")}
    assert stop_owner(journal_path) is not None
    _warm.path_of(paths).write_bytes(old)  # put the older snapshot back
    ran = _finish(journal_path, side, tmp_path, 30)
    assert (
        _ready_stats(journal_path)["warm"] == "stale: the DuckDB file changed since it was written"
    )
    assert set(range(16)) <= acked and not set(ran) & acked  # the newer steps were not lost

    other = tmp_path / "other" / "journal.duckdb"  # another journal's snapshot, copied here
    try:
        _interrupted_run(other, tmp_path / "side2", tmp_path, 30, 5)
        assert stop_owner(journal_path) is not None
        _warm.path_of(paths).write_bytes(_warm.path_of(JournalPaths(other)).read_bytes())
        assert _finish(journal_path, side, tmp_path, 30) == []  # its own run: completed
        assert str(_ready_stats(journal_path)["warm"]).startswith("stale")
    finally:
        stop_owner(other)
