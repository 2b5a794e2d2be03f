"""Issue 29, point 6: a project's `.letitloop/` never shows in `git status`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _kill_owner

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
from letitloop import durable, step

@durable
def hello() -> str:
    return step("greet", lambda: "hello")

print(hello())
"""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_new_journal_directory_is_ignored_by_git(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "flow.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "LIL_JOURNAL"}
    env["PYTHONPATH"] = str(ROOT)
    try:
        out = subprocess.run(
            [sys.executable, "flow.py"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert (
            project / ".letitloop" / "journal.duckdb"
        ).exists()  # found from .git, as documented
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=project,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert status.splitlines() == ["?? flow.py"], status
        assert (project / ".letitloop" / ".gitignore").read_text().splitlines()[-1] == "*"
    finally:
        _kill_owner(project / ".letitloop" / "journal.duckdb")


def test_another_directory_gets_no_gitignore(tmp_path: Path) -> None:
    from letitloop.journal._config import make_journal_dir

    make_journal_dir(tmp_path / "journals")  # LIL_JOURNAL=journals/x.duckdb: the user's folder
    assert not (tmp_path / "journals" / ".gitignore").exists()
    existing = tmp_path / "old" / ".letitloop"
    existing.mkdir(parents=True)
    make_journal_dir(existing)  # made before: left as the user keeps it
    assert not (existing / ".gitignore").exists()
