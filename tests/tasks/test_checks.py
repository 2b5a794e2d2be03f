"""Acceptance checks after each attempt: a failing check is the next attempt's critique (the
kernel's semantic retry), --strict refuses edits outside the task's paths, a Markdown invariant
is caught, and a protected signature is held."""

from __future__ import annotations

import json

from tests.tasks.conftest import Project

CALC = """
goal = "Implement add(a, b) in src/calc.py"
paths = ["src/**"]
agents = ["claude", "codex"]
protect = ["src/calc.py::add"]

[limits]
attempts = 4

[[checks]]
kind = "python"

[[checks]]
name = "tests"
kind = "command"
run = ["python", "check_calc.py"]
"""
CHECK = """import sys
sys.path.insert(0, "src")
import calc
assert calc.add(2, 3) == 5, "add(2, 3) is not 5"
"""
WRONG = "def add(a, b):\n    return a - b\n"
RIGHT = "def add(a, b):\n    return a + b\n"


def _write(files: dict[str, str]) -> dict[str, object]:
    return {"do": "write", "files": files}


def test_failed_checks_are_the_next_attempts_critique(project: Project) -> None:
    project.write("tasks/calc.toml", CALC)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", "def add(a, b):\n    raise NotImplementedError\n")
    project.plan({"claude": [_write({"src/calc.py": WRONG}), _write({"src/calc.py": RIGHT})]})
    done = project.lil("run", "--task", "calc", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["attempts"] == 2
    first, second = project.calls()
    assert "Critique" not in first["prompt"]
    assert "Critique of the previous attempt" in second["prompt"]
    assert "- tests: exited 1" in second["prompt"] and "add(2, 3) is not 5" in second["prompt"]
    shown = json.loads(project.lil("run", "show", "calc", "--json").stdout)
    a1, a2 = shown["attempts"]
    assert (a1["verdict"], a2["verdict"]) == ("rejected", "accepted")
    assert a1["critique"] == a2["critique_in"]  # journaled with the rejection, handed over
    assert [c["ok"] for c in a1["checks"]] == [True, False, True]  # python, tests, signature
    text = project.lil("run", "show", "calc")
    assert "critique after 1.1" in text.stdout and "rejected" in text.stdout


def test_critique_survives_failover_to_the_next_agent(project: Project) -> None:
    project.write("tasks/calc.toml", CALC)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", "def add(a, b):\n    raise NotImplementedError\n")
    project.plan(
        {
            "claude": [_write({"src/calc.py": WRONG}), {"do": "fail", "code": 1}],
            "codex": [_write({"src/calc.py": RIGHT})],
        }
    )
    done = project.lil("run", "--task", "calc", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["agent"] == "codex"
    codex = next(c for c in project.calls() if c["agent"] == "codex")
    assert "add(2, 3) is not 5" in codex["prompt"]


def test_protected_signature_change_is_a_failed_check(project: Project) -> None:
    project.write("tasks/calc.toml", CALC)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", "def add(a, b):\n    raise NotImplementedError\n")
    changed = "def add(a, b, c=0):\n    return a + b + c\n"
    project.plan({"claude": [_write({"src/calc.py": changed}), _write({"src/calc.py": RIGHT})]})
    done = project.lil("run", "--task", "calc", "--json")
    assert done.returncode == 0, done.stderr
    second = project.calls()[1]["prompt"]
    assert "protected signatures: src/calc.py::add changed its signature" in second


def test_strict_refuses_edits_outside_the_allowed_paths(project: Project) -> None:
    project.write("tasks/calc.toml", CALC)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", "def add(a, b):\n    raise NotImplementedError\n")
    project.write("setup.cfg", "[metadata]\nname = calc\n")
    sneaky = _write({"src/calc.py": RIGHT, "setup.cfg": "hacked\n"})
    project.plan({"claude": [sneaky, _write({"src/calc.py": RIGHT + "\n"})]})
    done = project.lil("run", "--task", "calc", "--strict", "--json")
    assert done.returncode == 0, done.stderr
    assert project.read("setup.cfg") == "[metadata]\nname = calc\n"  # put back
    shown = json.loads(project.lil("run", "show", "calc", "--json").stdout)
    first = shown["attempts"][0]
    assert first["verdict"] == "rejected" and first["outside"] == ["setup.cfg"]
    assert first["checks"][0] == {
        "name": "allowed paths (--strict)",
        "ok": False,
        "detail": "edits outside the allowed paths were refused and undone: setup.cfg",
    }
    assert "refused and undone: setup.cfg" in project.calls()[1]["prompt"]


def test_without_strict_outside_edits_are_reported(project: Project) -> None:
    project.write("tasks/calc.toml", CALC)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", "def add(a, b):\n    raise NotImplementedError\n")
    project.write("setup.cfg", "[metadata]\n")
    project.plan({"claude": [_write({"src/calc.py": RIGHT, "setup.cfg": "changed\n"})]})
    done = project.lil("run", "--task", "calc", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outside"] == ["setup.cfg"]
    assert project.read("setup.cfg") == "changed\n"


DOCS = """
goal = "Document the install steps"
paths = ["docs/**"]
agents = ["claude"]

[limits]
attempts = 2

[[checks]]
kind = "markdown"
paths = ["docs/*.md"]
"""
GUIDE = "# Guide\n\n## Install\n\nSee [usage](#usage).\n\n## Usage\n\nRun it.\n"


def test_a_markdown_invariant_is_caught(project: Project) -> None:
    project.write("tasks/docs.toml", DOCS)
    project.write("docs/guide.md", GUIDE)
    broken = (
        "---\ntitle: [unclosed\n---\n# Guide\n\n## Install\n\nSee [usage](#usage) and "
        "[api](api.md).\n\n```python\npip install x\n"
    )
    project.plan({"claude": [_write({"docs/guide.md": broken}), {"do": "fail"}]})
    done = project.lil("run", "--task", "docs", "--json")
    assert done.returncode == 1
    assert "did not succeed" in done.stderr
    shown = json.loads(project.lil("run", "show", "docs", "--json").stdout)
    detail = shown["attempts"][0]["checks"][0]["detail"]
    assert "docs/guide.md: the code fence opened on line 10 is never closed" in detail
    assert "the front matter is not valid YAML" in detail
    assert "heading '## Usage' (line 7 before) was removed" in detail
    assert "link to 'api.md': api.md does not exist" in detail
    assert "link to '#usage': no heading #usage" in detail
    assert "never closed" in project.calls()[1]["prompt"]
    assert shown["status"] == "failed"


def test_checks_failing_until_no_attempt_is_left_then_lil_runs_retry(project: Project) -> None:
    project.write("tasks/calc.toml", CALC.replace('["claude", "codex"]', '["claude"]'))
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", "def add(a, b):\n    raise NotImplementedError\n")
    wrong = [_write({"src/calc.py": WRONG + f"# try {n}\n"}) for n in range(1, 5)]
    project.plan({"claude": wrong})
    done = project.lil("run", "--task", "calc")
    assert done.returncode == 1
    assert "claude: the checks still failed after 4 attempt(s)" in done.stderr
    assert len(project.calls()) == 4
    # the kernel's dead letter: re-armed, the same turn gets a fresh budget of attempts
    assert project.lil("runs", "retry", "lil.task:calc").returncode == 0
    project.plan({"claude": [*wrong, _write({"src/calc.py": RIGHT})]})
    again = project.lil("run", "resume", "calc", "--json")
    assert again.returncode == 0, again.stderr
    assert len(project.calls()) == 5 and project.read("src/calc.py") == RIGHT
