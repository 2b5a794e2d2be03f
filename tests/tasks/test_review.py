"""--review: the agent's edits to Python definitions end as splice proposals; the task waits,
a person applies them from the CLI, and the resumed task runs its checks on the result."""

from __future__ import annotations

import json
import subprocess

from tests.tasks.conftest import Project

TASK = """
goal = "Make add() add, and give calc a version"
paths = ["src/**"]
agents = ["claude"]

[[checks]]
name = "tests"
kind = "command"
run = ["python", "check_calc.py"]
"""
CHECK = "import sys\nsys.path.insert(0, 'src')\nimport calc\nassert calc.add(2, 3) == 5\n"
OLD = (
    '"""Calculator."""\n\n\ndef add(a, b):\n    raise NotImplementedError\n\n\n'
    "def sub(a, b):\n    return a - b\n"
)
NEW = (
    '"""Calculator."""\n\nVERSION = "1.0"\n\n\ndef add(a, b):\n    return a + b\n\n\n'
    "def sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
)


def test_review_ends_waiting_then_proposals_applied_from_the_cli(project: Project) -> None:
    project.write("tasks/calc.toml", TASK)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", OLD)
    project.plan({"claude": [{"do": "write", "files": {"src/calc.py": NEW}}]})
    first = project.lil("run", "--task", "calc", "--review")
    assert first.returncode == 3, first.stderr  # waiting
    assert "task calc waiting" in first.stdout and "splice proposal" in first.stdout
    # the changed definition is back as it was; what is not a definition edit stays
    now = project.read("src/calc.py")
    assert "raise NotImplementedError" in now
    assert 'VERSION = "1.0"' in now and "def mul" in now
    listed = json.loads(project.lil("run", "list", "--json").stdout)
    assert [(r["task"], r["status"]) for r in listed] == [("calc", "waiting")]
    proposals = json.loads(project.lil("splice", "list", "--state", "pending", "--json").stdout)
    assert [(p["target"], p["origin"]) for p in proposals] == [("add", "lil.task:calc")]
    assert "return a + b" in proposals[0]["code"]
    shown = json.loads(project.lil("run", "show", "calc", "--json").stdout)
    assert [(p["target"], p["state"]) for p in shown["proposals"]] == [("add", "pending")]

    again = project.lil("run", "resume", "calc")  # nothing decided yet: still waiting
    assert again.returncode == 3, again.stderr

    applied = project.lil("splice", "apply", proposals[0]["id"])
    assert applied.returncode == 0, applied.stderr
    done = project.lil("run", "resume", "calc", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["decisions"] == {proposals[0]["id"]: "applied"}
    assert [c["ok"] for c in result["checks"]] == [True]
    assert project.read("src/calc.py") == NEW
    assert len(project.calls()) == 1  # the agent ran once: resuming replays its attempt


def test_rejected_proposal_fails_the_final_checks(project: Project) -> None:
    project.write("tasks/calc.toml", TASK)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", OLD)
    project.plan({"claude": [{"do": "write", "files": {"src/calc.py": NEW}}]})
    assert project.lil("run", "--task", "calc", "--review").returncode == 3
    pid = json.loads(project.lil("splice", "list", "--json").stdout)[0]["id"]
    assert project.lil("splice", "reject", pid, "--comment", "no").returncode == 0
    done = project.lil("run", "resume", "calc")
    assert done.returncode == 1
    assert "the reviewed tree fails its checks" in done.stderr


def test_a_receipt_signs_the_final_check_run(project: Project) -> None:
    import secrets

    from letitloop.receipts import Receipt, verify

    key, other = secrets.token_hex(32), secrets.token_hex(32)

    signed = TASK + 'receipt = "build/receipt.json"\n'
    project.write("tasks/calc.toml", signed)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", OLD)
    project.extra_env["LIL_RECEIPT_KEY"] = key
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*git, *cmd], cwd=project.root, check=True)
    project.plan({"claude": [{"do": "write", "files": {"src/calc.py": NEW}}]})
    done = project.lil("run", "--task", "calc", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["receipts"] == [
        {"check": "tests", "path": "build/receipt.json", "exit_code": 0}
    ]
    receipt = Receipt.load(project.root / "build" / "receipt.json")
    assert receipt.payload["command"] == ["python", "check_calc.py"]
    result = verify(receipt, key=key, cwd=project.root)
    assert result.ok, result.render()
    forged = verify(receipt, key=other, cwd=project.root)
    assert not forged.ok


def test_supervised_review_waits_too(project: Project) -> None:
    project.write("tasks/calc.toml", TASK)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", OLD)
    project.plan({"claude": [{"do": "write", "files": {"src/calc.py": NEW}}]})
    first = project.lil("run", "--task", "calc", "--review", "--supervise", "--json")
    assert first.returncode == 3, first.stderr  # Suspended crosses the supervisor as is
    assert json.loads(first.stdout)["status"] == "waiting"
