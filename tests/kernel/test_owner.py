"""The owner process: election, recovery from its log, lazy big outputs, SQL, idle exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from letitloop import durable, step
from letitloop.errors import ConfigError, JournalError
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import OwnerJournal, open_journal, stop_owner
from tests.helpers import child_env, journal_owner_pid, pid_alive, wait_gone


def test_owner_starts_on_demand_and_clients_never_import_duckdb(journal_path: Path) -> None:
    code = (
        "import sys\n"
        "from letitloop import durable, step\n"
        f"@durable(journal={str(journal_path)!r})\n"
        "def f(x):\n    return step('s', lambda v: v + 1, x)\n"
        "print(f(1), 'duckdb' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        check=True,
    )
    assert out.stdout.split() == ["2", "False"]
    assert pid_alive(journal_owner_pid(journal_path))


def test_killed_owner_recovers_every_acknowledged_record(journal_path: Path) -> None:
    journal = open_journal(journal_path)

    @durable(journal=journal, run_id="big")
    def flow(n: int) -> int:
        return sum(step(f"s{i}", lambda i=i: i) for i in range(n))

    assert flow(300) == sum(range(300))
    pid = journal_owner_pid(journal_path)
    os.kill(pid, signal.SIGKILL)  # very likely before the 20 ms fold of the last records
    wait_gone(pid, what=f"the killed owner {pid} to end")
    detail = journal.get_run(journal.find_run("big"))  # reconnects, starts a new owner
    assert detail.run.status == "completed" and detail.run.steps_done == 300
    assert journal_owner_pid(journal_path) != pid


def test_torn_log_tail_is_cut_and_never_applied(journal_path: Path) -> None:
    journal = open_journal(journal_path)

    @durable(journal=journal, run_id="t")
    def flow() -> int:
        return step("one", lambda: 1)

    assert flow() == 1
    pid = journal_owner_pid(journal_path)
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid, what=f"the killed owner {pid} to end")
    log_dir = JournalPaths(journal_path).log_dir
    last = sorted(log_dir.glob("*.wal"))[-1]
    with open(last, "ab") as f:
        f.write(b"\x40\x00\x00\x00garbage-that-is-not-a-frame")
    journal = OwnerJournal(journal_path)
    assert journal.stats()["torn_tails_cut"] == 1
    assert journal.get_run(journal.find_run("t")).run.status == "completed"


def test_big_outputs_are_fetched_lazily_after_restart(journal_path: Path) -> None:
    big = "x" * 300_000
    state = {"fail": True}

    @durable(journal=journal_path, run_id="big-out")
    def flow() -> int:
        out = step("big", lambda: big)
        if state["fail"]:
            raise RuntimeError("stop")
        return len(out)

    with pytest.raises(RuntimeError):
        flow()
    stop_owner(journal_path)
    state["fail"] = False
    assert flow() == 300_000


def test_sql_is_read_only(journal_path: Path) -> None:
    journal = open_journal(journal_path)

    @durable(journal=journal, run_id="q")
    def flow() -> int:
        return step("one", lambda: 1)

    flow()
    result = journal.sql("SELECT status, count(*) AS n FROM runs GROUP BY status")
    assert {k: result[k] for k in ("columns", "rows")} == {
        "columns": ["status", "n"],
        "rows": [["completed", 1]],
    }
    assert result["truncated"] is False
    for bad in ("DELETE FROM runs", "SELECT 1; DROP TABLE runs", "CREATE TABLE x(a INT)"):
        with pytest.raises(ConfigError, match="single SELECT"):
            journal.sql(bad)
    assert journal.sql("SELECT count(*) FROM runs")["rows"] == [[1]]


def test_stopped_owner_leaves_a_clean_duckdb_file(journal_path: Path) -> None:
    @durable(journal=journal_path, run_id="clean")
    def flow() -> int:
        return step("one", lambda: 1)

    flow()
    assert stop_owner(journal_path) is not None
    paths = JournalPaths(journal_path)
    assert not paths.socket.exists() and not paths.pid_file.exists()
    # everything was folded into DuckDB, so the log keeps nothing (one empty segment)
    assert [f.stat().st_size for f in paths.log_dir.iterdir()] == [0]
    con = duckdb.connect(str(journal_path), read_only=True)
    assert con.execute("SELECT status FROM runs").fetchall() == [("completed",)]
    con.close()


def test_idle_owner_exits_by_itself(journal_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIL_OWNER_IDLE", "0.5")
    journal = OwnerJournal(journal_path)
    pid = journal.owner_pid
    journal.close()
    wait_gone(pid, what=f"the idle owner {pid} to exit")
    assert not JournalPaths(journal_path).socket.exists()


def test_direct_duckdb_open_is_refused_while_the_owner_runs(journal_path: Path) -> None:
    open_journal(journal_path).list_runs()
    with pytest.raises(duckdb.IOException, match="lock"):
        duckdb.connect(str(journal_path), read_only=True)


def test_owner_started_while_another_serves_exits_quietly(journal_path: Path) -> None:
    open_journal(journal_path).list_runs()
    pid = journal_owner_pid(journal_path)
    out = subprocess.run(
        [sys.executable, "-m", "letitloop.journal.duckdb.owner", "--journal", str(journal_path)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=30,
    )
    assert out.returncode == 0 and "another owner" in out.stdout
    assert journal_owner_pid(journal_path) == pid


def test_unknown_run_is_a_clear_error(journal_path: Path) -> None:
    with pytest.raises(JournalError, match="no run matches"):
        open_journal(journal_path).find_run("nope")


def test_owner_that_cannot_start_is_reported_at_once_with_its_log(journal_path: Path) -> None:
    """A corrupt sealed log segment stops recovery: the client says why, with the owner's log."""
    open_journal(journal_path).list_runs()
    stop_owner(journal_path)
    log_dir = JournalPaths(journal_path).log_dir
    (log_dir / f"{0:020d}.wal").write_bytes(b"\x05\x00\x00\x00garbage")  # not a frame, sealed:
    (log_dir / f"{1 << 40:020d}.wal").write_bytes(b"")  # a later segment exists
    t0 = time.monotonic()
    with pytest.raises(JournalError) as err:
        OwnerJournal(journal_path)
    assert time.monotonic() - t0 < 10
    assert "exited with status" in str(err.value) and "corrupt" in str(err.value)


def test_owner_memory_is_bounded_and_evicted_runs_reload(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIL_OWNER_MAX_RUNS", "5")
    journal = OwnerJournal(journal_path)
    calls: list[int] = []
    state = {"fail": True}

    @durable(journal=journal)
    def flow(i: int) -> int:
        out = step("double", lambda v: calls.append(v) or v * 2, i)
        if i == 0 and state["fail"]:
            raise RuntimeError("stop")
        return out

    with pytest.raises(RuntimeError):
        flow(0)
    assert [flow(i) for i in range(1, 20)] == [2 * i for i in range(1, 20)]
    journal.sql("SELECT 1")  # a read: everything is folded, so old runs may be evicted
    flow(100)
    assert journal.stats()["loaded_runs"] <= 5
    calls.clear()
    assert flow(3) == 6  # an evicted completed run: its result, from DuckDB
    state["fail"] = False
    assert flow(0) == 0 and calls == []  # an evicted failed run resumes: step 0 replays
    assert len(journal.list_runs(limit=100)) == 21
