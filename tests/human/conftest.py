"""Helpers for tests that run real workflow processes and the real ``lil`` CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUN_ID = "human_workflows.publish:publish-1"


def env_for(journal_path: Path, log: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]),
        PYTHONUNBUFFERED="1",
        LIL_JOURNAL=str(journal_path),
        HUMAN_LOG=str(log),
    )
    env.update(extra)
    return env


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
        return subprocess.run(
            [sys.executable, "-m", "letitloop", *args],
            env=self.env,
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

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


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def result_of(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err
