"""Failover between agent CLIs, on real processes: missing, failing, hanging and idle agents
hand over in order, and each reason is journaled."""

from __future__ import annotations

import json

from tests.tasks.conftest import Project

TASK = """
goal = "Make greet() say hello"
paths = ["src/**"]
agents = [
  "claude", "codex", "gemini", "aider",
  {name = "mine", command = ["custom-agent", "{prompt}"]},
]

[limits]
attempts = 6
agent_timeout = 3

[[checks]]
kind = "regex"
paths = ["src/greet.py"]
pattern = "hello"
"""


def test_failover_order_and_reasons_journaled(project: Project) -> None:
    project.write("tasks/greet.toml", TASK)
    project.write("src/greet.py", "def greet():\n    return 'hi'\n")
    (project.bin / "claude").unlink()  # not installed
    project.plan(
        {
            "codex": [{"do": "fail", "code": 7}],
            "gemini": [{"do": "hang"}],
            "aider": [{"do": "nothing"}],
            "custom-agent": [
                {"do": "write", "files": {"src/greet.py": "def greet():\n    return 'hello'\n"}}
            ],
        }
    )
    done = project.lil("run", "--task", "greet", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["agent"] == "mine"
    assert result["failovers"] == [
        "claude: not installed (claude is not on PATH)",
        "codex: exited 7",
        "gemini: timed out after 3 s",
        "aider: made no change",
    ]
    assert project.read("src/greet.py").endswith("'hello'\n")
    # the agents really ran, in order, each with the prompt the way its preset passes it
    calls = project.calls()
    assert [c["agent"] for c in calls] == ["codex", "gemini", "aider", "custom-agent"]
    assert all("Make greet() say hello" in c["prompt"] for c in calls)
    assert calls[0]["argv"][:2] == ["exec", "--sandbox"]
    assert "-p" in calls[1]["argv"] and "--message-file" in calls[2]["argv"]

    shown = project.lil("run", "show", "greet", "--json")
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert detail["status"] == "completed"
    rows = [(a["agent"], a["verdict"], a["exit_code"], a["reason"]) for a in detail["attempts"]]
    assert rows == [
        ("claude", "failover", None, "claude: not installed (claude is not on PATH)"),
        ("codex", "failover", 7, "codex: exited 7"),
        ("gemini", "failover", -9, "gemini: timed out after 3 s"),
        ("aider", "failover", 0, "aider: made no change"),
        ("mine", "accepted", 0, None),
    ]
    assert "+    return 'hello'" in detail["attempts"][-1]["diff"]
    listed = json.loads(project.lil("run", "list", "--json").stdout)
    assert [(r["task"], r["status"]) for r in listed] == [("greet", "completed")]


def test_a_task_run_is_a_normal_run_for_lil_runs_and_the_tui(project: Project) -> None:
    project.write("tasks/greet.toml", TASK)
    project.write("src/greet.py", "def greet():\n    return 'hi'\n")
    project.plan(
        {
            "claude": [
                {"do": "write", "files": {"src/greet.py": "def greet():\n    return 'hello'\n"}}
            ]
        }
    )
    done = project.lil("run", "--task", "greet")
    assert done.returncode == 0, done.stderr
    assert "task greet done by claude in 1 attempt(s)" in done.stdout
    assert "lil run: claude: checks passed" in done.stderr
    shown = project.lil("runs", "show", "lil.task:greet")
    assert shown.returncode == 0 and "agent claude" in shown.stdout
    from letitloop.tui._model import Model

    model = Model(project.journal)
    try:
        assert [(r.run_id, r.status) for r in model.runs()] == [("lil.task:greet", "completed")]
        view = model.detail("lil.task:greet")
        assert [s.name for s in view.steps] == ["begin", "agent claude"]
    finally:
        model.close()
