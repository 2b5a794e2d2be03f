"""The task runner keeps its agents in the project: real agent processes leave real symbolic
links (to a file, in place of a directory), forged files under ``.letitloop/tasks/`` name paths
outside the tree, and no restore, snapshot or receipt the runner writes lands outside it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.tasks.conftest import Project

ORIGINAL = "def add(a, b):\n    raise NotImplementedError\n"
FIXED = "def add(a, b):\n    return a + b\n"
TASK = """
goal = "Implement add(a, b) in src/calc.py"
paths = ["src/**"]
agents = ["codex", "claude"]

[[checks]]
name = "tests"
kind = "command"
run = ["python", "-c", "import sys; sys.path[:0] = ['src']; import calc; assert calc.add(2,3) == 5"]
"""


def _setup(project: Project, task: str = TASK) -> Path:
    """The project, and a directory beside it (outside the tree) holding a file to protect."""
    project.write("tasks/calc.toml", task)
    project.write("src/calc.py", ORIGINAL)
    outside = project.root.parent / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious\n")
    return outside


def _shown(project: Project) -> list[dict[str, object]]:
    done = project.lil("run", "show", "calc", "--json")
    assert done.returncode == 0, done.stderr
    attempts: list[dict[str, object]] = json.loads(done.stdout)["attempts"]
    return attempts


def test_a_failed_agents_symlink_is_not_followed_by_the_restore(project: Project) -> None:
    outside = _setup(project)
    victim = outside / "victim.txt"
    project.plan(
        {
            "codex": [
                {"do": "write", "files": {}, "links": {"src/calc.py": str(victim)}, "code": 1}
            ],
            "claude": [{"do": "write", "files": {"src/calc.py": FIXED}}],
        }
    )
    done = project.lil("run", "--task", "calc", "--json")
    assert victim.read_text() == "precious\n"  # main wrote the original calc.py into it
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["failovers"] == ["codex: exited 1"]
    calc = project.root / "src" / "calc.py"
    assert not calc.is_symlink() and calc.read_text() == FIXED
    codex = _shown(project)[0]
    assert f"Symbolic link src/calc.py changed: a file -> link to '{victim}'" in str(codex["diff"])
    # claude started from the original file put back in place of the link
    assert [c["agent"] for c in project.calls()] == ["codex", "claude"]


def test_a_symlinked_parent_directory_does_not_redirect_the_restore(project: Project) -> None:
    outside = _setup(project)
    (outside / "calc.py").write_text("precious\n")
    project.plan(
        {
            "codex": [{"do": "write", "files": {}, "links": {"src": str(outside)}, "code": 1}],
            "claude": [{"do": "write", "files": {"src/calc.py": FIXED}}],
        }
    )
    done = project.lil("run", "--task", "calc", "--json")
    assert (outside / "calc.py").read_text() == "precious\n"  # main restored calc.py into it
    assert done.returncode == 0, done.stderr
    src = project.root / "src"
    assert src.is_dir() and not src.is_symlink()
    assert (src / "calc.py").read_text() == FIXED
    assert sorted(p.name for p in outside.iterdir()) == ["calc.py", "victim.txt"]


def test_a_fifo_in_place_of_a_file_does_not_hang_the_restore(project: Project) -> None:
    _setup(project)
    project.plan(
        {
            "codex": [{"do": "write", "files": {}, "fifos": ["src/calc.py"], "code": 1}],
            "claude": [{"do": "write", "files": {"src/calc.py": FIXED}}],
        }
    )
    done = project.lil("run", "--task", "calc", "--json", timeout=90)  # main blocked in open()
    assert done.returncode == 0, done.stderr
    calc = project.root / "src" / "calc.py"
    assert calc.is_file() and calc.read_text() == FIXED
    assert [c["agent"] for c in project.calls()] == ["codex", "claude"]


def test_a_symlink_left_by_a_successful_attempt_is_refused_with_a_critique(
    project: Project,
) -> None:
    outside = _setup(project, TASK.replace('["codex", "claude"]', '["claude"]'))
    escape = outside / "calc.py"
    escape.write_text(FIXED)  # a link to it would pass the check: the check would run it
    project.plan(
        {
            "claude": [
                {
                    "do": "write",
                    "files": {},
                    "links": {"src/calc.py": str(escape)},
                    "critiqued": {"src/calc.py": FIXED},
                }
            ]
        }
    )
    done = project.lil("run", "--task", "calc", "--json")
    assert done.returncode == 0, done.stderr
    calc = project.root / "src" / "calc.py"
    assert not calc.is_symlink() and calc.read_text() == FIXED
    assert escape.read_text() == FIXED
    attempts = _shown(project)
    assert [a["verdict"] for a in attempts] == ["rejected", "accepted"]
    critique = str(attempts[0]["critique"])
    assert "no symbolic links" in critique and f"src/calc.py -> {escape}" in critique
    assert "write regular files" in critique
    # the second invocation got the critique, and started from the original file, not the link
    second = project.calls()[1]
    assert "symbolic links" in second["prompt"]
    assert "-    raise NotImplementedError" in str(attempts[1]["diff"])


def _entry(text: str) -> list[str]:
    return [hashlib.sha256(text.encode()).hexdigest(), text]


def test_a_forged_base_file_naming_paths_outside_the_tree_is_refused(project: Project) -> None:
    outside = _setup(project)
    victim = outside / "victim.txt"
    absolute = outside / "absolute.txt"
    forged = {
        "src/calc.py": _entry(ORIGINAL),
        "../outside/victim.txt": _entry("overwritten by the runner\n"),
        str(absolute): _entry("written by the runner\n"),
    }
    project.write(".letitloop/tasks/calc/epoch-0/base-1.json", json.dumps(forged))
    project.plan({"codex": [{"do": "write", "files": {"src/calc.py": "half"}, "code": 1}]})
    done = project.lil("run", "--task", "calc")
    assert victim.read_text() == "precious\n" and not absolute.exists()
    assert done.returncode != 0
    assert (
        "snapshot .letitloop/tasks/calc/epoch-0/base-1.json cannot be used: it names "
        "'../outside/victim.txt', which is not a path inside the project"
    ) in done.stderr
    assert "lil runs reset lil.task:calc" in done.stderr  # the fix
    assert "Traceback" not in done.stderr
    assert project.calls() == []  # refused before any agent ran


def test_the_runner_state_behind_a_symlink_is_refused(project: Project) -> None:
    outside = _setup(project)
    loot = outside / "loot"
    loot.mkdir()
    (project.root / ".letitloop").mkdir()
    (project.root / ".letitloop" / "tasks").symlink_to(loot)  # an earlier agent planted it
    project.write("src/secret.py", "TOKEN = 'not for outside'\n")
    project.plan({"codex": [{"do": "write", "files": {"src/calc.py": FIXED}}]})
    done = project.lil("run", "--task", "calc")
    assert list(loot.iterdir()) == []  # main saved the project's snapshots, secrets and all
    assert done.returncode != 0
    assert ".letitloop/tasks is not a directory (a symbolic link or a file)" in done.stderr


def test_a_receipt_is_never_written_through_a_symlinked_directory(project: Project) -> None:
    outside = _setup(project)
    task = TASK.replace('run = ["python"', 'receipt = "build/calc.receipt.json"\nrun = ["python"')
    project.write("tasks/calc.toml", task)
    (project.root / "build").symlink_to(outside)
    project.extra_env["LIL_RECEIPT_KEY"] = "a receipt key for the test, long enough"
    project.plan({"codex": [{"do": "write", "files": {"src/calc.py": FIXED}}]})
    done = project.lil("run", "--task", "calc")
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]  # main signed into it
    assert done.returncode != 0
    assert "build is not a directory (a symbolic link or a file)" in done.stderr


def test_a_receipt_path_outside_the_project_is_a_task_file_error(project: Project) -> None:
    outside = _setup(project)
    task = TASK.replace('run = ["python"', 'receipt = "../outside/r.json"\nrun = ["python"')
    project.write("tasks/calc.toml", task)
    project.extra_env["LIL_RECEIPT_KEY"] = "a receipt key for the test, long enough"
    project.plan({"codex": [{"do": "write", "files": {"src/calc.py": FIXED}}]})
    done = project.lil("run", "--task", "calc")
    assert not (outside / "r.json").exists()  # main wrote the receipt there
    assert done.returncode != 0
    assert "receipt '../outside/r.json' is not a path inside the project" in done.stderr
    assert project.calls() == []  # refused when the task file was read


def test_a_forged_review_plan_is_refused(tmp_path: Path) -> None:
    """The review plan read back names only files the task's first snapshot holds as text
    (on main a forged plan alone fails with a KeyError; with a forged origin.json beside it, it
    rewrote files outside the tree, which the snapshot check above now refuses first)."""
    from letitloop.tasks import TaskStateError
    from letitloop.tasks._review import _load_plan
    from letitloop.tasks._tree import Snapshot

    origin: Snapshot = {"src/calc.py": (hashlib.sha256(ORIGINAL.encode()).hexdigest(), ORIGINAL)}
    plan = tmp_path / ".letitloop" / "plan.json"
    plan.parent.mkdir()
    for key in ("../outside/victim.py", "/etc/victim.py", "src/other.py"):
        plan.write_text(json.dumps({key: FIXED}))
        with pytest.raises(TaskStateError, match=r"review plan \.letitloop/plan\.json"):
            _load_plan(tmp_path, ".letitloop/plan.json", origin)
    plan.write_text(json.dumps({"src/calc.py": FIXED}))
    assert _load_plan(tmp_path, ".letitloop/plan.json", origin) == {"src/calc.py": FIXED}
