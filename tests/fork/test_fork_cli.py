"""``lil runs fork`` in real subprocesses, on a real DuckDB file (its owner process) and on
PostgreSQL: the fork imports the workflow as ``lil runs resume`` does and runs from STEP on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Lil, child_env, wait_until

HERE = Path(__file__).resolve().parent


def _env(journal: str, calls: Path) -> dict[str, str]:
    return child_env(journal, pythonpath=[HERE], FORK_CALLS=str(calls))


def _run(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _calls(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(params=["owner", "postgres"])
def journal_url(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "postgres":
        yield request.getfixturevalue("pg_dsn")
        return
    path = tmp_path / "journal" / "journal.duckdb"
    yield str(path)
    from tests.conftest import _kill_owner

    _kill_owner(path)


def test_lil_runs_fork_from_a_step_with_new_arguments(journal_url: str, tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    env = _env(journal_url, calls)
    lil = Lil(env, tmp_path, timeout=300, script=True)  # the installed console script
    source = _run(
        env,
        tmp_path,
        sys.executable,
        "-c",
        "import json, fork_workflows; print(json.dumps(fork_workflows.pipeline('ada')))",
    )
    assert source.returncode == 0, source.stderr
    outputs = json.loads(source.stdout)
    assert len(_calls(calls)) == 4
    (row,) = lil.json("runs", "list", "--json")
    source_id = row["run_id"]
    before = lil.json("runs", "show", source_id, "--json")

    calls.unlink()
    fork = lil.json(
        "runs", "fork", source_id[:20], "--from", "review", "--args", '["bob"]', "--json"
    )
    assert fork["forked_from"] == {
        "run_id": source_id,
        "position": 2,
        "epoch": 0,
        "step": "review",
    }
    assert fork["reused"] == 2 and fork["resumable"] is True
    assert _calls(calls) == []  # forking alone runs nothing
    listed = {r["run_id"]: r["status"] for r in lil.json("runs", "list", "--json")}
    assert listed == {source_id: "completed", fork["run_id"]: "suspended"}

    # run it the way `lil runs resume` does: exactly the steps from "review" on execute
    proc = lil.run("runs", "resume", fork["run_id"], "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert _calls(calls) == ["review bob", "publish bob"]
    assert result[:2] == outputs[:2]  # reused: the very outputs the source journaled
    assert result[2].startswith("review:bob:") and result[3].startswith("publish:bob:")
    assert lil.json("runs", "show", source_id, "--json") == before  # source untouched
    shown = lil.json("runs", "show", fork["run_id"], "--json")
    assert shown["run"]["forked_from"] == {
        "run_id": source_id,
        "position": 2,
        "epoch": 0,
        "step": "review",
    }
    text = lil.run("runs", "show", fork["run_id"]).stdout
    assert f"forked from {source_id} at 'review' (position 2), epoch 0" in text

    # --run forks and runs in one go; by position this time, with the source's own arguments
    calls.unlink()
    again = lil.json("runs", "fork", source_id, "--from", "3", "--run", "--json")
    assert again["status"] == "completed" and again["reused"] == 3
    assert again["result"][:3] == outputs[:3]
    assert _calls(calls) == ["publish ada"]


def test_lil_runs_fork_refuses_a_running_run_and_bad_steps(
    journal_url: str, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.txt"
    env = _env(journal_url, calls)
    lil = Lil(env, tmp_path, timeout=300, script=True)  # the installed console script
    gate = tmp_path / "gate"
    # a run that blocks inside its second step until the gate file appears, in its own process
    code = (
        "import os, time, fork_workflows as w\n"
        "from letitloop import durable, step\n"
        "def wait(_):\n"
        f"    while not os.path.exists({str(gate)!r}): time.sleep(0.05)\n"
        "    return 1\n"
        "@durable(name='fork.blocked', run_id='b1')\n"
        "def blocked():\n"
        "    step('first', lambda: 0)\n"
        "    return step('second', wait, 0)\n"
        "print(blocked())\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:

        def at_second() -> bool:
            listed = lil.run("runs", "list", "--json")  # fails until created
            runs = json.loads(listed.stdout) if listed.returncode == 0 else []
            return bool(runs) and runs[0]["current_step"] == "second"

        # 600 tries of a lil subprocess and 0.1 s before: minutes on a loaded machine
        wait_until(at_second, 240, what="the blocked run to reach its second step", interval=0.1)
        proc = lil.run("runs", "fork", "fork.blocked:b1", "--from", "second")
        assert proc.returncode == 1, proc.stdout
        assert proc.stderr.startswith("error: "), proc.stderr
        assert "is being executed by" in proc.stderr and "fork again" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(lil.json("runs", "list", "--json")) == 1  # no fork was made
    finally:
        gate.touch()
        worker.wait(120)
    assert worker.returncode == 0
    proc = lil.run("runs", "fork", "fork.blocked:b1", "--from", "third")
    assert proc.returncode == 1 and "no step named 'third'" in proc.stderr, proc.stderr
    proc = lil.run("runs", "fork", "fork.blocked:b1", "--from", "1", "--args", "{")
    assert proc.returncode == 2 and "not JSON" in proc.stderr, proc.stderr


def test_a_fork_killed_midway_resumes_where_it_stopped(journal_url: str, tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    env = _env(journal_url, calls)
    lil = Lil(env, tmp_path, timeout=300, script=True)  # the installed console script
    code = "import json, fork_workflows; print(json.dumps(fork_workflows.pipeline('ada')))"
    source = _run(env, tmp_path, sys.executable, "-c", code)
    assert source.returncode == 0, source.stderr
    outputs = json.loads(source.stdout)
    (row,) = lil.json("runs", "list", "--json")
    calls.unlink()
    # the fork runs from "summarize" and its process is SIGKILLed inside "review"
    killed = lil.run(
        "runs",
        "fork",
        row["run_id"],
        "--from",
        "summarize",
        "--run",
        env=env | {"FORK_KILL_AT": "review"},
    )
    assert killed.returncode == -9, killed.stderr
    assert _calls(calls) == ["summarize ada", "review ada"]
    runs = {r["run_id"]: r for r in lil.json("runs", "list", "--json")}
    (fork_id,) = set(runs) - {row["run_id"]}
    assert runs[fork_id]["status"] == "interrupted" and runs[fork_id]["steps_done"] == 2
    done = lil.run("runs", "resume", fork_id, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    # fetch was reused from the source, summarize from the killed try; review ran again
    assert _calls(calls) == ["summarize ada", "review ada", "review ada", "publish ada"]
    assert result[0] == outputs[0] and result[1] != outputs[1]
    assert runs[row["run_id"]]["status"] == "completed"
