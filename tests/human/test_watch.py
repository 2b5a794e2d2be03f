"""``lil watch`` supervising real scripts: crashes by SIGKILL (journaled on DuckDB and on
PostgreSQL, and shown among a run's decisions by ``lil runs show``), a breaker, and Ctrl+C."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from letitloop import open_journal
from tests.helpers import wait_gone, wait_until

from .conftest import HERE, Lab

TEN = "human_workflows.ten_steps:ten-steps"


def watch(lab: Lab, *args: str) -> subprocess.Popen[str]:
    return lab.start_lil("watch", *args)


@pytest.fixture(params=["duckdb", "postgresql"])
def watched(request: pytest.FixtureRequest, lab: Lab) -> Lab:
    """The lab on a DuckDB file behind its owner, or on a fresh PostgreSQL database."""
    if request.param == "postgresql":
        lab.env["LIL_JOURNAL"] = request.getfixturevalue("pg_dsn")
    return lab


def test_script_killing_itself_at_steps_3_and_7_finishes_each_step_once(watched: Lab) -> None:
    lab = watched
    proc = watch(lab, "--backoff", "0.1", str(HERE / "human_workflows.py"), "ten", "3,7")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "RESULT 55" in out
    assert err.count("killed by SIGKILL") == 2 and "restarting in" in err
    assert "could not journal" not in err
    assert lab.names() == [f"step-{i}" for i in range(1, 11)]  # each executed exactly once
    assert len({pid for _, pid, _ in lab.steps()}) == 3  # by three processes
    journal = open_journal(lab.env["LIL_JOURNAL"])
    restarts = [e for e in journal.events(run_id=TEN) if e.kind == "restart"]
    assert len(restarts) == 2
    assert (
        "killed by SIGKILL" in restarts[0].data["reason"] and "lil watch" in restarts[0].data["by"]
    )
    shown = lab.lil("runs", "show", TEN)  # its decisions: each restart, by whom and why
    assert shown.returncode == 0, shown.stderr
    said = [line.strip() for line in shown.stdout.splitlines() if "restarted by " in line]
    assert len(said) == 2 and all("restarted by lil watch " in line for line in said), said
    assert "restart 1: " in said[0] and "restart 2: " in said[1] and "killed by SIGKILL" in said[1]


def test_breaker_trips_on_a_script_that_always_crashes(lab: Lab, tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    starts = tmp_path / "starts"
    script.write_text(f"open({str(starts)!r}, 'a').write('x')\nraise SystemExit(2)\n")
    proc = watch(lab, "--max-restarts", "2", "--backoff", "0.05", str(script))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "giving up" in err and "crashed 3 times in a row" in err and "max_restarts=2" in err
    assert starts.read_text() == "xxx"  # the first start and two restarts, then nothing


def test_no_restart_codes_end_the_watch(lab: Lab, tmp_path: Path) -> None:
    script = tmp_path / "done.py"
    script.write_text("raise SystemExit(75)\n")
    proc = watch(lab, "--no-restart-on", "75", str(script))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 75 and "restarting" not in err


def test_ctrl_c_stops_child_and_watcher(lab: Lab, tmp_path: Path) -> None:
    script = tmp_path / "sleeper.py"
    pids = tmp_path / "pids"
    script.write_text(
        f"import os, time\nopen({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\ntime.sleep(120)\n"
    )
    proc = watch(lab, str(script))
    child = int(wait_until(lambda: pids.exists() and pids.read_text().split(), 30, what="child")[0])
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "restarting" not in err
    assert len(pids.read_text().split()) == 1  # never restarted
    wait_gone(child, 30, what="the child to exit")


def test_watch_without_a_script_is_a_usage_error(lab: Lab) -> None:
    done = lab.lil("watch")
    assert done.returncode == 2 and "give a script to run" in done.stderr
