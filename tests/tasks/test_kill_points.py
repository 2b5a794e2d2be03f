"""A runner SIGKILLed at each point of an attempt's life ends, when the same command runs
again, exactly as a runner that was never killed: the saved trees and the journal agree at
every point, and the attempt in flight runs again on, and is compared with, the tree as it was
before it began.

The runner kills itself (``LIL_TASK_KILL_AT``, see ``letitloop/tasks/_killpoints.py``) with a
real SIGKILL, in a real ``lil run --task`` process, with real agent processes and a real
journal. The agents are deterministic in their prompt and tree, as a real agent run again is:
codex half-edits two files and exits 1 (a failover, whose edits are undone); claude writes a
wrong ``add`` first and the right one once its prompt carries the critique.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tasks.conftest import Project, kill_agents

ORIGINAL = "def add(a, b):\n    raise NotImplementedError\n"
MINUS = "def add(a, b):\n    return a - b\n"
PLUS = "def add(a, b):\n    return a + b\n"
TASK = """
goal = "Implement add(a, b) in src/calc.py"
paths = ["src/**"]
agents = ["codex", "claude"]

[limits]
attempts = 3          # what the uninterrupted run needs: a kill must not use one up

[[checks]]
name = "tests"
kind = "command"
run = ["python", "check.py"]
"""
CHECK = (
    "import sys\nsys.path.insert(0, 'src')\nimport calc\n"
    "assert calc.add(2, 3) == 5, f'add(2, 3) returned {calc.add(2, 3)}'\n"
)
PLAN: dict[str, list[dict[str, Any]]] = {
    "codex": [{"do": "write", "files": {"src/calc.py": "half", "src/extra.py": "junk"}, "code": 1}],
    "claude": [
        {"do": "write", "files": {"src/calc.py": MINUS}, "critiqued": {"src/calc.py": PLUS}}
    ],
}
# (point, N): the N-th time the killed process reaches the point (see _killpoints)
POINTS = [
    ("begin", 1),  # the first snapshot saved, `begin` not journaled
    ("attempt", 1),  # codex: its base saved, the agent not started
    ("agent", 1),  # codex exited 1, its half edits on disk
    ("restore", 1),  # one of codex's two edits undone
    ("returned", 1),  # codex's failover built, not journaled
    ("turned", 1),  # codex's turn journaled
    ("attempt", 2),  # claude's first attempt, the agent not started
    ("agent", 2),  # claude wrote the wrong add
    ("saved", 1),  # the tree after it saved, its rejection not journaled (the old bug)
    ("returned", 2),  # the same, just before the kernel journals
    ("attempt", 3),  # the rejection journaled; claude's second attempt not started
    ("agent", 3),  # claude wrote the right add
    ("saved", 2),  # accepted, not journaled
    ("turned", 2),  # claude's turn journaled, the run's result not
]


def _project(root: Path, journal: Path, name: str) -> Project:
    """A project whose task ``name`` (one run id per point: they share one journal)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    project = Project(root, ("codex", "claude"))
    project.journal = journal  # one owner for every point: the test stays quick
    project.write(f"tasks/{name}.toml", TASK)
    project.write("check.py", CHECK)
    project.write("src/calc.py", ORIGINAL)
    project.plan(PLAN)
    return project


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The journal every point uses, and the result of a run that was never killed."""
    base = tmp_path_factory.mktemp("kill-points")
    journal = base / "journal" / "journal.duckdb"
    quiet = _project(base / "uninterrupted" / "proj", journal, "calc")
    try:
        done = quiet.lil("run", "--task", "calc", "--json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["agent"] == "claude" and result["attempts"] == 3
        assert result["failovers"] == ["codex: exited 1"]
        assert quiet.read("src/calc.py") == PLUS
        yield journal, result
    finally:
        from tests.conftest import _kill_owner

        _kill_owner(journal)


@pytest.mark.parametrize(("point", "nth"), POINTS, ids=[f"{p}@{n}" for p, n in POINTS])
def test_a_runner_killed_at_each_point_ends_as_an_uninterrupted_one(
    tmp_path: Path, shared: tuple[Path, dict[str, Any]], point: str, nth: int
) -> None:
    journal, uninterrupted = shared
    name = f"calc-{point}-{nth}"
    project = _project(tmp_path / "proj", journal, name)
    try:
        _kill_and_resume(project, name, f"{point}@{nth}", uninterrupted)
    finally:
        kill_agents(project)


def test_the_save_before_the_journal_write_on_postgresql(
    tmp_path: Path, shared: tuple[Path, dict[str, Any]], pg_dsn: str
) -> None:
    """The old bug's point on a PostgreSQL journal: the journal, read back there, decides too."""
    _, uninterrupted = shared
    project = _project(tmp_path / "proj", tmp_path / "unused.duckdb", "calc")
    project.extra_env["LIL_JOURNAL"] = pg_dsn
    try:
        _kill_and_resume(project, "calc", "saved@1", uninterrupted)
        assert not (tmp_path / "unused.duckdb").exists()  # the runs were on PostgreSQL
    finally:
        kill_agents(project)


def _kill_and_resume(project: Project, name: str, kill_at: str, uninterrupted: Any) -> None:
    """Run the task killed at ``kill_at``, run it again, and check it ended as ``uninterrupted``
    did, each attempt compared with the tree before it began."""
    project.extra_env["LIL_TASK_KILL_AT"] = kill_at
    killed = project.lil("run", "--task", name, "--json")
    assert killed.returncode == -9, (killed.returncode, killed.stderr)  # a real SIGKILL
    del project.extra_env["LIL_TASK_KILL_AT"]

    again = project.lil("run", "--task", name, "--json")  # the same command again
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == uninterrupted | {"task": name}
    assert project.read("src/calc.py") == PLUS
    assert not (project.root / "src" / "extra.py").exists()  # codex's edit stays undone

    shown = project.lil("run", "show", name, "--json")
    attempts = json.loads(shown.stdout)["attempts"]
    finished = [a for a in attempts if a["verdict"] != "started"]
    assert [(a["agent"], a["verdict"]) for a in finished] == [
        ("codex", "failover"),
        ("claude", "rejected"),
        ("claude", "accepted"),
    ]
    # each attempt is compared with the tree as it was before it began: the first claude
    # attempt with the original (codex's half edit undone), the second with the first's
    rejected, accepted = finished[1]["diff"], finished[2]["diff"]
    assert "-    raise NotImplementedError" in rejected and "half" not in rejected
    assert "-    return a - b" in accepted and "+    return a + b" in accepted
    assert "add(2, 3) returned -1" in finished[1]["critique"]
