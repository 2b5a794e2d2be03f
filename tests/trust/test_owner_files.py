"""The owner's files, and a deleted or moved project (issue 35, points 7 and 8), with real owner
processes and real file-system changes.

On the old owner a FIFO at ``<journal>.duckdb.warm`` (or at a log segment's name, the pid
file's temporary name, the DuckDB file) blocked every owner for ever in ``open()``, and a link
at the lock file's name was followed (the file it named was created). A project's
``.letitloop/`` deleted under its idle owner was resurrected by it (the owner re-bound its
socket, re-creating the directory), and calls then answered from the deleted journal; after
``mv proj proj2`` the owner re-created ``proj/.letitloop/`` and crashed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import OwnerJournal, stop_owner
from tests.helpers import pid_alive, wait_gone

# one client call in a process of its own, so an owner that blocks cannot hang the test
CALL = """
import sys
from pathlib import Path
from letitloop.journal.duckdb._client import OwnerJournal
try:
    j = OwnerJournal(Path(sys.argv[1]))
    print("RUNS", sorted(r.run_id for r in j.list_runs()), j.owner_pid, flush=True)
except Exception as exc:
    print("ERROR", type(exc).__name__, exc, flush=True)
"""


def _call(journal: Path, timeout: float = 90) -> str:
    env = dict(os.environ, LIL_CONNECT_TIMEOUT="20", LIL_READ_TIMEOUT="10")
    try:
        done = subprocess.run(
            [sys.executable, "-c", CALL, str(journal)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return "HUNG"
    return done.stdout.strip() or done.stderr.strip()


def _import_run(journal: OwnerJournal, run_id: str) -> None:
    start = {"k": "run", "run": run_id, "wf": "files", "key": run_id, "epoch": 0, "try": 1}
    start |= {"args": None, "entry": None, "parent": None, "by": "test", "ts": time.time()}
    done = {"k": "done", "run": run_id, "epoch": 0, "codec": "json", "out": b"1"}
    done |= {"ts": time.time(), "shown": None}
    journal.import_records([start, done])


def _journal_with_a_run(journal_path: Path) -> JournalPaths:
    """A journal holding run ``r1``, its owner stopped cleanly (a warm snapshot left)."""
    journal = OwnerJournal(journal_path)
    _import_run(journal, "r1")
    journal.close()
    assert stop_owner(journal_path, timeout=30) is not None
    return JournalPaths(journal_path)


def _segment(paths: JournalPaths) -> Path:
    return sorted(paths.log_dir.iterdir())[-1]


# what is put at which file's name (a FIFO blocks open(); a link is followed)
CASES = {
    "warm snapshot FIFO": lambda p: p.db.with_name(p.db.name + ".warm"),
    "log segment FIFO": _segment,
    "pid file's temporary FIFO": lambda p: p.pid_file.with_name(p.pid_file.name + ".tmp"),
    "DuckDB file FIFO": lambda p: p.db,
    "owner log FIFO": lambda p: p.owner_log,
}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_fifo_at_a_journal_file_is_refused_never_blocks(case: str, journal_path: Path) -> None:
    """Each call finishes: it either works without the file (a warm snapshot, a temporary
    file: ignored or replaced) or fails with an error naming the path; nothing blocks."""
    paths = _journal_with_a_run(journal_path)
    target = CASES[case](paths)
    if target.exists():
        target.unlink()
    os.mkfifo(target, 0o600)
    out = _call(journal_path)
    assert out != "HUNG", f"a FIFO at {target} blocked the journal"
    if out.startswith("RUNS"):
        assert "'r1'" in out, out
        assert case in ("warm snapshot FIFO", "pid file's temporary FIFO"), out
    else:
        assert str(target) in out and "FIFO" in out, out
    if case == "warm snapshot FIFO":  # ignored (left for a person to see), the owner said why
        assert "refused" in paths.owner_log.read_text() and target.exists()


@pytest.mark.timeout(120)
def test_a_link_at_the_lock_file_is_not_followed(journal_path: Path, tmp_path: Path) -> None:
    paths = _journal_with_a_run(journal_path)
    elsewhere = tmp_path / "not-the-journal" / "victim"
    elsewhere.parent.mkdir()
    paths.lock.unlink()
    paths.lock.symlink_to(elsewhere)
    out = _call(journal_path)
    assert not elsewhere.exists(), "the owner followed the link and created its target"
    assert out.startswith("ERROR") and str(paths.lock) in out and "symbolic link" in out, out


@pytest.mark.timeout(120)
def test_a_key_that_is_not_a_regular_file_is_refused_never_blocks(journal_path: Path) -> None:
    """The journal's HMAC key file, read by a warm start and written at a stop."""
    from letitloop import _keys

    if os.environ.get(_keys.KEY_ENV):
        pytest.skip("the key comes from the environment here")
    journal = OwnerJournal(journal_path)
    _import_run(journal, "r1")
    key = _keys.key_path(journal.journal_id)
    journal.close()
    assert stop_owner(journal_path, timeout=30) is not None
    saved = key.read_bytes()
    key.unlink()
    os.mkfifo(key, 0o600)
    try:
        out = _call(journal_path)
        assert out != "HUNG", "a FIFO at the journal's key blocked the owner"
        assert "'r1'" in out, out  # the snapshot is not trusted without its key: a cold start
        pid = int(out.split()[-1])
        assert stop_owner(journal_path, timeout=30) == pid
        log = JournalPaths(journal_path).owner_log.read_text()
        assert f"{key} is a FIFO" in log, log[-1500:]
    finally:
        key.unlink()
        key.write_bytes(saved)


def _project(tmp_path: Path) -> Path:
    return tmp_path / "proj" / ".letitloop" / "journal.duckdb"


@pytest.mark.timeout(180)
def test_a_deleted_project_is_never_resurrected(tmp_path: Path) -> None:
    """``rm -rf .letitloop`` under an idle owner: every later call answers from the new,
    empty journal (never the deleted one), and the old owner exits at once."""
    journal_path = _project(tmp_path)
    journal = OwnerJournal(journal_path)
    _import_run(journal, "old-run")
    old_pid = journal.owner_pid
    journal.close()
    shutil.rmtree(journal_path.parent)
    try:
        answers = []
        for _ in range(8):  # calls spread over the old owner's socket checks (every second)
            answers.append(_call(journal_path))
            time.sleep(0.4)
        assert all(a.startswith("RUNS [] ") for a in answers), answers
        wait_gone(old_pid, what="the old owner to end")
        pids = {a.split()[-1] for a in answers}
        assert len(pids) == 1 and str(old_pid) not in pids, answers  # one new owner throughout
    finally:
        stop_owner(journal_path, timeout=30)
        _stop_pid(old_pid)


@pytest.mark.timeout(180)
def test_a_moved_project_is_not_recreated_and_keeps_its_runs(tmp_path: Path) -> None:
    """``mv proj proj2`` under an idle owner: the owner exits without re-creating
    ``proj/.letitloop`` and without a crash; the journal at its new place has every run."""
    journal_path = _project(tmp_path)
    journal = OwnerJournal(journal_path)
    _import_run(journal, "kept-run")
    pid = journal.owner_pid
    journal.close()
    moved = tmp_path / "proj2"
    (tmp_path / "proj").rename(moved)
    try:
        wait_gone(pid, 15, what="the owner of the moved journal to end")
        assert not (tmp_path / "proj").exists(), "the owner re-created the moved project"
        new_path = moved / ".letitloop" / "journal.duckdb"
        log = JournalPaths(new_path).owner_log.read_text()
        assert "Traceback" not in log and "FileNotFoundError" not in log, log[-1500:]
        assert "'kept-run'" in _call(new_path)
    finally:
        _stop_pid(pid)
        stop_owner(moved / ".letitloop" / "journal.duckdb", timeout=30)


@pytest.mark.timeout(180)
def test_a_client_never_talks_to_the_owner_of_another_journal(tmp_path: Path) -> None:
    """Journal B's socket name leads to journal A's owner (a hard link to A's socket): B's
    client checks the identity A's owner gives in its hello, refuses it, and starts B's own
    owner; it never sees A's runs, and A's owner goes on serving A."""
    a_path = tmp_path / "a" / "journal.duckdb"
    b_path = tmp_path / "b" / "journal.duckdb"
    a = OwnerJournal(a_path)
    _import_run(a, "a-run")
    b_paths = JournalPaths(b_path)
    b_paths.root.mkdir(parents=True)
    os.link(JournalPaths(a_path).socket, b_paths.socket)
    try:
        out = _call(b_path)
        assert out.startswith("RUNS [] "), out
        assert int(out.split()[-1]) != a.owner_pid
        assert [r.run_id for r in a.list_runs()] == ["a-run"]
        assert stop_owner(b_path, timeout=30) == int(out.split()[-1])
    finally:
        a.close()
        stop_owner(a_path, timeout=30)


def _stop_pid(pid: int) -> None:
    if pid_alive(pid):
        os.kill(pid, 9)
