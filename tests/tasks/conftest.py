"""A throwaway project per test: a task file, fake agent CLIs on PATH, a real journal, and
``lil`` run as a real subprocess in that project."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import child_env, pids_matching, run_lil, start_lil, wait_until

AGENTS = Path(__file__).resolve().parent / "agents"


class Project:
    """One project directory with its own journal, agents bin and plan."""

    def __init__(self, root: Path, agents: tuple[str, ...]) -> None:
        self.root = root
        self.journal = root.parent / "journal" / "journal.duckdb"
        self.bin = root.parent / "bin"
        self.plan_file = root.parent / "plan.json"
        self.log = root.parent / "agents.log"
        self.extra_env: dict[str, str] = {}
        self.bin.mkdir()
        (root / "tasks").mkdir(parents=True)
        for name in ("python3", "python"):
            (self.bin / name).symlink_to(sys.executable)
        self.install(*agents)
        self.plan({})

    def install(self, *agents: str) -> None:
        """Put these fake agent CLIs on the project's PATH (the others are "not installed")."""
        for name in agents:
            (self.bin / name).symlink_to(AGENTS / name)

    def plan(self, plan: dict[str, list[dict[str, Any]]]) -> None:
        self.plan_file.write_text(json.dumps(plan))

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text()

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def env(self) -> dict[str, str]:
        """The project's environment: its fake agents alone on PATH, its journal and plan."""
        return child_env(
            self.journal,
            PATH=f"{self.bin}:/usr/bin:/bin",
            FAKE_AGENT_PLAN=str(self.plan_file),
            FAKE_AGENT_LOG=str(self.log),
            COLUMNS="200",
            **self.extra_env,
        )

    def lil(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """``lil ARGS`` run to its end in the project."""
        return run_lil(*args, env=self.env(), cwd=self.root, timeout=timeout)

    def start_lil(self, *args: str) -> subprocess.Popen[str]:
        """``lil ARGS`` left running in the project."""
        return start_lil(*args, env=self.env(), cwd=self.root)

    def wait_for_calls(self, n: int, timeout: float = 60) -> list[dict[str, Any]]:
        """The agent calls once there are ``n`` of them."""
        seen = wait_until(
            lambda: (calls,) if len(calls := self.calls()) >= n else None,
            timeout,
            what=lambda: f"{n} agent calls, saw {self.calls()}",
        )
        return seen[0]


def kill_agents(project: Project) -> None:
    """SIGKILL any fake agent of this project still running, so a test never leaves one."""
    for pid in pids_matching(str(project.bin)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    p = Project(tmp_path / "proj", ("claude", "codex", "gemini", "aider", "custom-agent"))
    yield p
    kill_agents(p)
    from tests.conftest import _kill_owner

    _kill_owner(p.journal)
