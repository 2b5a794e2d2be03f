"""Chaos beyond SIGKILL (issue 14): real owners, real writers, real signals and damaged bytes.

* the owner is SIGSTOPped again and again under 4 writers (they wait, then go on);
* a subscriber process is SIGSTOPped while 4 writers run (nobody waits for it);
* a byte in the middle of the log's last segment is flipped after a crash under 4 writers
  (the owner refuses, ``lil journal doctor --salvage`` keeps every intact record).

Each ends with the same audit: every step a writer saw acknowledged is completed in the
journal, each position has exactly one attempt (nothing ran again), every result is right.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import defaultdict
from pathlib import Path

import msgpack
import pytest

from letitloop.errors import JournalUnavailableError
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import OwnerJournal
from letitloop.journal.duckdb.owner._log import _frames
from tests.crash.crash_helpers import Worker, kill_all
from tests.helpers import owner_pid, run_lil, wait_gone, wait_until

N_WRITERS = 4
STEPS = 100


def expected(wid: int) -> int:
    acc = wid
    for i in range(STEPS):
        acc = (acc * 7 + i + wid) % 1_000_003
    return acc


def _writers(journal_path: Path, tmp_path: Path, stop_file: Path) -> list[Worker]:
    return [
        Worker(
            "writer_worker.py",
            journal_path,
            k,
            stop_file,
            STEPS,
            stderr_path=tmp_path / f"writer{k}.stderr",
        )
        for k in range(N_WRITERS)
    ]


def _audit(journal_path: Path, writers: list[Worker]) -> int:
    """Every acknowledged step is completed, once; every result right. Returns steps acked."""
    acked: dict[str, set[int]] = defaultdict(set)
    results: dict[str, int] = {}
    for wid, w in enumerate(writers):
        lines = w.snapshot()
        assert lines[0] == "READY" and lines[-1] == "EXIT", w.diagnostics()
        for line in lines:
            if line.startswith("S "):
                _, key, index = line.split()
                acked[f"writer:{key}"].add(int(index))
            elif line.startswith("R "):
                _, key, value = line.split()
                results[f"writer:{key}"] = int(value)
                assert int(value) == expected(wid), f"wrong result of {key}"
    assert set(results) == set(acked) and results
    journal = OwnerJournal(journal_path)
    try:
        for run_id, indices in acked.items():
            detail = journal.get_run(run_id)
            assert detail.run.status == "completed", run_id
            done = {a.position for a in detail.attempts if a.status == "completed"}
            assert indices <= done, f"{run_id}: acknowledged steps lost: {sorted(indices - done)}"
            assert [(a.position, a.attempt) for a in detail.attempts] == [
                (i, 1) for i in range(STEPS)
            ], f"{run_id}: a step ran again"
    finally:
        journal.close()
    return sum(len(v) for v in acked.values())


@pytest.mark.timeout(240)
def test_owner_sigstopped_under_writers_loses_nothing_and_reruns_nothing(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 SIGSTOPs of the owner (0.2-1.5 s each, seeded) while 4 writers run 100-step runs."""
    monkeypatch.setenv("LIL_WRITE_TIMEOUT", "60")
    paths = JournalPaths(journal_path)
    stop_file = tmp_path / "stop"
    rng = random.Random(1412)
    writers: list[Worker] = []
    stops = 0
    pid = None
    try:
        writers = _writers(journal_path, tmp_path, stop_file)
        assert all(w.wait_prefix("READY", 30) for w in writers)
        pid = owner_pid(paths.pid_file)
        assert pid is not None
        for _ in range(12):
            time.sleep(rng.uniform(0.05, 0.4))
            os.kill(pid, signal.SIGSTOP)
            time.sleep(rng.uniform(0.2, 1.5))
            os.kill(pid, signal.SIGCONT)
            stops += 1
            assert all(w.proc.poll() is None for w in writers), [w.diagnostics() for w in writers]
        stop_file.touch()
        for w in writers:
            assert w.finish(120) == 0, w.diagnostics()
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGCONT)
        kill_all(writers)
    assert owner_pid(paths.pid_file) == pid, "the owner was replaced: SIGSTOP is not death"
    total = _audit(journal_path, writers)
    print(f"\nowner SIGSTOPs: {stops}, acknowledged steps: {total}")


@pytest.mark.timeout(240)
def test_a_stopped_subscriber_under_four_writers(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGSTOPped subscriber process: 4 writers finish 3 runs each in time; the subscriber
    re-reads after SIGCONT."""
    monkeypatch.setenv("LIL_OWNER_MAX_UNREAD", str(64 * 1024))
    stop_file = tmp_path / "stop"
    journal = OwnerJournal(journal_path)  # this test's owner, with the small bound
    sub = Worker("subscriber_worker.py", journal_path, stderr_path=tmp_path / "sub.err")
    writers: list[Worker] = []
    try:
        assert sub.wait_prefix("READY", 30), sub.diagnostics()
        sub.proc.send_signal(signal.SIGSTOP)
        writers = _writers(journal_path, tmp_path, stop_file)
        runs_done = lambda: sum(  # noqa: E731
            1 for w in writers for line in w.snapshot() if line.startswith("R ")
        )
        wait_until(
            lambda: runs_done() >= 3 * N_WRITERS,
            150,
            what=lambda: [w.snapshot()[-2:] for w in writers],
            interval=0.005,
        )
        stop_file.touch()
        for w in writers:
            assert w.finish(120) == 0, w.diagnostics()
        sub.proc.send_signal(signal.SIGCONT)
        assert sub.wait_prefix("REREAD", 30), sub.snapshot()[-3:]
    finally:
        sub.proc.send_signal(signal.SIGCONT)
        sub.kill()
        kill_all(writers)
        journal.close()
    total = _audit(journal_path, writers)
    print(f"\nacknowledged steps under a stopped subscriber: {total}")


@pytest.mark.timeout(240)
def test_corruption_mid_segment_after_a_crash_under_writers(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4 writers run (records not yet folded); the owner is SIGKILLed; a byte is flipped in a
    step-start record in the middle of the last segment. The owner refuses to serve (naming the
    segment and offset: the old one silently cut everything after it); salvage keeps every
    other record; every acknowledged step is there, and calling each run again runs nothing."""
    monkeypatch.setenv("LIL_OWNER_FOLD_DELAY", "3600")
    paths = JournalPaths(journal_path)
    stop_file = tmp_path / "stop"
    writers: list[Worker] = []
    try:
        writers = _writers(journal_path, tmp_path, stop_file)
        runs_done = lambda: sum(  # noqa: E731
            1 for w in writers for line in w.snapshot() if line.startswith("R ")
        )
        wait_until(
            lambda: runs_done() >= N_WRITERS, 150, what="a run of each writer", interval=0.005
        )
        stop_file.touch()
        for w in writers:
            assert w.finish(120) == 0, w.diagnostics()
    finally:
        kill_all(writers)
    pid = owner_pid(paths.pid_file)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid, what=f"the killed owner {pid} to end")
    import duckdb

    db = duckdb.connect(str(journal_path), read_only=True)
    (folded,) = db.execute("SELECT folded_lsn FROM fold_state").fetchone()  # type: ignore[misc]
    db.close()
    segment = sorted(paths.log_dir.iterdir())[-1]
    base = int(segment.name[:-4])
    data = bytearray(segment.read_bytes())
    frames = list(_frames(bytes(data)))
    starts = [0] + [end for end, _ in frames[:-1]]
    middle = [
        (start, end)
        for (end, payload), start in zip(frames, starts, strict=True)
        if msgpack.unpackb(payload).get("k") == "step" and base + start >= folded
    ]
    start, end = middle[len(middle) // 2]
    data[(start + 8 + end) // 2] ^= 0x5A
    segment.write_bytes(bytes(data))
    after = sum(1 for e, _ in frames if e > end)
    unfolded = sum(1 for e, _ in frames if base + e > folded)
    assert after > 50, f"only {after} records after the damage"

    with pytest.raises(JournalUnavailableError) as caught:
        OwnerJournal(journal_path)
    assert str(segment) in str(caught.value) and f"at byte {start}" in str(caught.value)
    salvage = run_lil("journal", "doctor", "--salvage", "--journal", str(journal_path))
    assert f"kept {unfolded - 1} intact record(s)" in salvage.stdout, salvage.stdout
    total = _audit(journal_path, writers)
    # calling each run again returns its journaled result and executes nothing
    from letitloop import durable, step

    calls: list[int] = []
    for line in (x for w in writers for x in w.snapshot() if x.startswith("R ")):
        _, key, value = line.split()

        def body() -> int:
            acc = 0
            for i in range(STEPS):
                acc = step(f"s{i}", lambda i, a: calls.append(i) or a, i, acc)
            return acc

        run = durable(journal=journal_path, run_id=key, name="writer", lock_timeout=30)(body)
        assert run() == int(value), key
    assert calls == [], f"{len(calls)} steps ran again"
    print(f"\ncorrupted {segment.name} at byte {start}; {after} later records kept; {total} acked")
