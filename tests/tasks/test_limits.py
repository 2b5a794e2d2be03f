"""Limits and cancelling: the task's time bounds each invocation and stops the task, a cost
limit stops it before the next invocation, and a cancelled task does not run again."""

from __future__ import annotations

import json

from tests.tasks.conftest import Project

TASK = """
goal = "Write the answer"
paths = ["src/**"]
agents = ["gemini", "claude", "codex"]

[limits]
attempts = 5
time = {time}
{cost}

[[checks]]
kind = "exists"
paths = ["src/answer.txt"]
"""


def test_the_time_limit_bounds_the_invocation_and_stops_the_task(project: Project) -> None:
    project.write("tasks/t.toml", TASK.format(time=3, cost=""))
    project.plan({"gemini": [{"do": "hang"}]})
    done = project.lil("run", "--task", "t")
    assert done.returncode == 1
    assert "gemini: timed out after" in done.stderr and "time limit of 3 s" in done.stderr
    assert [c["agent"] for c in project.calls()] == ["gemini"]  # claude never started
    assert "lil run: gemini: attempt 1" in done.stderr  # progress lines
    shown = json.loads(project.lil("run", "show", "t", "--json").stdout)
    assert [a["verdict"] for a in shown["attempts"]] == ["failover", "stopped"]
    assert shown["status"] == "failed"


def test_the_cost_limit_stops_before_the_next_invocation(project: Project) -> None:
    # the claude preset reads total_cost_usd (0.01 from the fake) from its JSON output
    project.write("tasks/t.toml", TASK.format(time=600, cost="cost_usd = 0.01"))
    project.plan({"gemini": [{"do": "fail"}], "claude": [{"do": "nothing"}]})
    done = project.lil("run", "--task", "t")
    assert done.returncode == 1
    assert "cost limit of $0.01" in done.stderr
    assert [c["agent"] for c in project.calls()] == ["gemini", "claude"]
    listed = json.loads(project.lil("run", "list", "--json").stdout)
    assert listed[0]["cost_usd"] == 0.01


def test_cancel_stops_a_waiting_task(project: Project) -> None:
    project.write("tasks/t.toml", TASK.format(time=600, cost=""))
    project.write("src/x.py", "def f():\n    return 1\n")
    project.plan(
        {
            "gemini": [
                {
                    "do": "write",
                    "files": {"src/x.py": "def f():\n    return 2\n", "src/answer.txt": "42"},
                }
            ]
        }
    )
    assert project.lil("run", "--task", "t", "--review").returncode == 3
    cancelled = project.lil("run", "cancel", "t", "--reason", "not now")
    assert cancelled.returncode == 0, cancelled.stderr
    resumed = project.lil("run", "resume", "t")
    assert resumed.returncode == 1 and "cancelled" in resumed.stderr
    listed = json.loads(project.lil("run", "list", "--json").stdout)
    assert listed[0]["status"] == "cancelled"
