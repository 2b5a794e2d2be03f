"""Helpers for tests that run real workflow processes and the real ``lil`` CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import child_env, run_lil, start_lil

HERE = Path(__file__).resolve().parent
RUN_ID = "human_workflows.publish:publish-1"


def env_for(journal_path: Path, log: Path, **extra: str) -> dict[str, str]:
    """A child's environment that imports ``human_workflows`` and logs its steps to ``log``."""
    return child_env(
        journal_path, pythonpath=[HERE], PYTHONUNBUFFERED="1", HUMAN_LOG=str(log), **extra
    )


class Lab:
    """A journal, a step log and ways to start workflow processes and ``lil`` commands."""

    def __init__(self, journal_path: Path, tmp_path: Path) -> None:
        self.journal_path = journal_path
        self.log = tmp_path / "steps.log"
        self.env = env_for(journal_path, self.log)
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "human_workflows", *args],
            env=self.env,
            cwd=HERE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def lil(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """``lil ARGS`` run to its end, on this lab's journal."""
        return run_lil(*args, env=self.env, cwd=HERE, timeout=timeout)

    def start_lil(self, *args: str) -> subprocess.Popen[str]:
        """``lil ARGS`` left running (stopped by ``close``), on this lab's journal."""
        proc = start_lil(*args, env=self.env, cwd=HERE)
        self.procs.append(proc)
        return proc

    def steps(self) -> list[tuple[str, int, float]]:
        if not self.log.exists():
            return []
        rows = [line.split() for line in self.log.read_text().splitlines()]
        return [(r[0], int(r[1]), float(r[2])) for r in rows]

    def names(self) -> list[str]:
        return [name for name, _, _ in self.steps()]

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


@pytest.fixture
def lab(journal_path: Path, tmp_path: Path) -> Any:
    lab = Lab(journal_path, tmp_path)
    yield lab
    lab.close()


def result_of(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err
