"""``lil run --task --review`` on a PostgreSQL journal, end to end with real processes: the task
waits for review, its proposal is listed, applied or rejected from the CLI, and the resumed task
checks the tree; nothing is written to a DuckDB file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tasks.conftest import Project
from tests.tasks.test_review import CHECK, NEW, OLD, TASK


def _waiting_on(project: Project, pg_dsn: str, tmp_path: Path) -> str:
    """Run the task on PostgreSQL until it waits for review; the id of its one proposal."""
    project.extra_env["LIL_JOURNAL"] = pg_dsn
    project.extra_env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # where deciders take turns
    project.write("tasks/calc.toml", TASK)
    project.write("check_calc.py", CHECK)
    project.write("src/calc.py", OLD)
    project.plan({"claude": [{"do": "write", "files": {"src/calc.py": NEW}}]})
    first = project.lil("run", "--task", "calc", "--review")
    assert first.returncode == 3, first.stderr  # waiting for review
    listed = json.loads(project.lil("run", "list", "--json").stdout)
    assert [(r["task"], r["status"], r["steps_done"]) for r in listed] == [("calc", "waiting", 4)]
    pending = project.lil("splice", "list", "--state", "pending", "--json")
    assert pending.returncode == 0, pending.stderr
    proposals = json.loads(pending.stdout)
    assert [(p["target"], p["origin"]) for p in proposals] == [("add", "lil.task:calc")]
    shown = json.loads(project.lil("run", "show", "calc", "--json").stdout)
    assert [(p["target"], p["state"]) for p in shown["proposals"]] == [("add", "pending")]
    assert "raise NotImplementedError" in project.read("src/calc.py")
    return str(proposals[0]["id"])


def test_a_reviewed_task_applied_on_postgresql(
    project: Project, pg_dsn: str, tmp_path: Path
) -> None:
    pid = _waiting_on(project, pg_dsn, tmp_path)
    applied = project.lil("splice", "apply", pid)
    assert applied.returncode == 0, applied.stderr
    assert project.read("src/calc.py") == NEW
    again = project.lil("splice", "apply", pid)
    assert again.returncode == 1 and "already applied by" in again.stderr + again.stdout
    done = project.lil("run", "resume", "calc", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["decisions"] == {pid: "applied"}
    assert [c["ok"] for c in result["checks"]] == [True]
    assert len(project.calls()) == 1  # the agent ran once: resuming replayed its attempt
    (lock,) = (tmp_path / "cache" / "letitloop" / "locks").iterdir()
    assert lock.name.startswith("splice-") and lock.stat().st_mode & 0o077 == 0
    listed = json.loads(project.lil("run", "list", "--json").stdout)
    assert [(r["task"], r["status"]) for r in listed] == [("calc", "completed")]
    assert not project.journal.exists()  # every record went to PostgreSQL


def test_a_reviewed_task_rejected_on_postgresql(
    project: Project, pg_dsn: str, tmp_path: Path
) -> None:
    pid = _waiting_on(project, pg_dsn, tmp_path)
    rejected = project.lil("splice", "reject", pid, "--comment", "not like this")
    assert rejected.returncode == 0, rejected.stderr
    state = json.loads(project.lil("splice", "list", "--json").stdout)
    assert [(p["state"], p["note"]) for p in state] == [("rejected", "not like this")]
    done = project.lil("run", "resume", "calc")
    assert done.returncode == 1 and "the reviewed tree fails its checks" in done.stderr
    assert "raise NotImplementedError" in project.read("src/calc.py")
    assert not project.journal.exists()
