"""A runner SIGKILLed mid-attempt: the same command again continues at the attempt in flight,
and finished attempts are not repeated; ``--supervise`` restarts a killed runner by itself."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.helpers import pids_matching, wait_until
from tests.tasks.conftest import Project

TASK = """
goal = "Write the answer into src/answer.txt"
paths = ["src/**"]
agents = ["codex", "claude"]

[limits]
attempts = 4

[[checks]]
kind = "regex"
paths = ["src/answer.txt"]
pattern = "^42$"
"""
GOOD = {"do": "write", "files": {"src/answer.txt": "42\n"}}
PARTIAL = {"do": "write", "files": {"src/answer.txt": "4"}, "then": "hang"}


def _wait_gone(project: Project, timeout: float = 30) -> None:
    wait_until(
        lambda: not pids_matching(str(project.bin)),
        timeout,
        what="the agent to end with its runner (it outlived it)",
    )


def _wait_file(path: Path, text: str, timeout: float = 60) -> None:
    wait_until(
        lambda: path.exists() and path.read_text() == text,
        timeout,
        what=lambda: f"{path} to hold {text!r}",
    )


def test_sigkill_mid_attempt_resumes_without_repeating(project: Project) -> None:
    project.write("tasks/answer.toml", TASK)
    project.write("src/answer.txt", "unknown\n")
    project.plan({"codex": [{"do": "fail", "code": 2}], "claude": [PARTIAL, GOOD]})
    runner = project.start_lil("run", "--task", "answer")
    try:
        project.wait_for_calls(2)  # codex failed over, claude is editing
        _wait_file(project.root / "src/answer.txt", "4")
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(30)
    finally:
        if runner.poll() is None:
            runner.kill()
    _wait_gone(project)  # the agent died with its runner: nobody edits behind the resume
    shown = json.loads(project.lil("run", "show", "answer", "--json").stdout)
    assert [(a["agent"], a["verdict"]) for a in shown["attempts"]] == [
        ("codex", "failover"),
        ("claude", "started"),
    ]

    again = project.lil("run", "--task", "answer", "--json")  # the same command again
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["agent"] == "claude" and result["failovers"] == ["codex: exited 2"]
    calls = [(c["agent"], c["call"]) for c in project.calls()]
    assert calls == [("codex", 1), ("claude", 1), ("claude", 2)]  # codex did not run again
    assert project.read("src/answer.txt") == "42\n"
    shown = json.loads(project.lil("run", "show", "answer", "--json").stdout)
    rows = [(a["agent"], a["attempt"], a["verdict"]) for a in shown["attempts"]]
    assert rows == [("codex", 1, "failover"), ("claude", 1, "started"), ("claude", 2, "accepted")]
    # the attempt run again is compared with the tree from before the killed one began
    last = shown["attempts"][-1]
    assert last["changed"] == ["src/answer.txt"] and "-unknown" in last["diff"]

    third = project.lil("run", "--task", "answer", "--json")  # completed: nothing runs
    assert third.returncode == 0 and len(project.calls()) == 3


def test_the_attempt_run_again_starts_from_the_tree_the_killed_one_began_with(
    project: Project,
) -> None:
    """An agent killed mid-edit with its runner left half a change; the attempt run again must
    not build on it: the resumed runner undoes it first (an agent that edits the file it finds,
    as coding agents do, would otherwise see the broken half: the cookbook's stand-in did)."""
    project.write("tasks/answer.toml", TASK.replace('["codex", "claude"]', '["claude"]'))
    project.write("src/answer.txt", "unknown\n")
    half = {"do": "write", "files": {"src/answer.txt": "4", "src/scratch.txt": "x"}, "then": "hang"}
    project.plan({"claude": [half, GOOD]})
    runner = project.start_lil("run", "--task", "answer")
    try:
        project.wait_for_calls(1)
        _wait_file(project.root / "src/scratch.txt", "x")
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(30)
    finally:
        if runner.poll() is None:
            runner.kill()
    _wait_gone(project)
    again = project.lil("run", "--task", "answer", "--json")
    assert again.returncode == 0, again.stderr
    assert "the interrupted attempt's edits were undone (2 file(s))" in again.stderr
    assert not (project.root / "src/scratch.txt").exists()  # the half-done edit is gone
    assert json.loads(again.stdout)["changed"] == ["src/answer.txt"]
    assert project.read("src/answer.txt") == "42\n"


def _children(pid: int) -> list[int]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(proc.name))
    return out


def test_supervise_restarts_a_killed_runner(project: Project) -> None:
    project.write("tasks/answer.toml", TASK.replace('["codex", "claude"]', '["claude"]'))
    project.write("src/answer.txt", "unknown\n")
    project.plan({"claude": [PARTIAL, GOOD]})
    runner = project.start_lil("run", "--task", "answer", "--supervise", "--json")
    try:
        project.wait_for_calls(1)
        _wait_file(project.root / "src/answer.txt", "4")
        children = _children(runner.pid)
        assert len(children) == 1, children  # the supervised runner
        os.kill(children[0], signal.SIGKILL)
        stdout, stderr = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0, stderr
    assert "restart" in stderr
    assert json.loads(stdout)["agent"] == "claude"
    assert [(c["agent"], c["call"]) for c in project.calls()] == [("claude", 1), ("claude", 2)]
    assert project.read("src/answer.txt") == "42\n"
