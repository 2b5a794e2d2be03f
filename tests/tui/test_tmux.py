"""The installed ``lil-tui`` entry point in a real terminal (tmux): it follows a workflow running
in another process and approves the approval that workflow is blocked on, with key presses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tui_helpers import HERE

ROOT = HERE.parents[1]
LIL_TUI = Path(sys.executable).parent / "lil-tui"
TMUX = shutil.which("tmux") or "/usr/bin/tmux"


class Terminal:
    """One tmux server on a private socket, one session running a command."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.socket = f"lil-tui-test-{os.getpid()}"
        self.env = env
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            "160",
            "-y",
            "48",
            " ".join(command),
        )

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            [TMUX, "-L", self.socket, *args], capture_output=True, text=True, env=self.env
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "main")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "main", *keys)

    def wait_for(self, *texts: str, timeout: float = 30.0) -> str:
        """Poll the screen until every text is on it (a real terminal has no event to await)."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if all(t in shown for t in texts):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{texts} not on screen after {timeout}s:\n{shown}")
            time.sleep(0.05)

    def alive(self) -> bool:
        return (
            subprocess.run(
                [TMUX, "-L", self.socket, "has-session", "-t", "main"],
                capture_output=True,
                env=self.env,
            ).returncode
            == 0
        )

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(TERM="xterm-256color", PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]))
    env.pop("LIL_JOURNAL", None)
    env.pop("TMUX", None)
    return env


@pytest.fixture
def terminal(journal_path: Path, env: dict[str, str]) -> Iterator[Terminal]:
    assert LIL_TUI.exists(), f"{LIL_TUI} is not installed (pip install -e .)"
    term = Terminal([str(LIL_TUI), "--journal", str(journal_path)], env)
    yield term
    term.close()


def test_lil_tui_follows_a_workflow_and_approves_what_it_waits_for(
    journal_path: Path, terminal: Terminal, env: dict[str, str]
) -> None:
    terminal.wait_for("0 of 0 runs", "q Quit")
    workflow = subprocess.Popen(
        [sys.executable, str(HERE / "tui_workflows.py"), str(journal_path), "approval"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        shown = terminal.wait_for("blog.publish:post-1", "1 of 1 runs")
        assert "running" in shown or "suspended" in shown
        terminal.keys("2")
        terminal.wait_for("publish", '"title": "Hello"')
        assert workflow.poll() is None  # blocked on the approval
        terminal.keys("a")
        terminal.wait_for("Comment (optional)")
        terminal.keys("Enter")
        out, _ = workflow.communicate(timeout=60)
    finally:
        workflow.kill()
    assert workflow.returncode == 0 and out.strip() == "posted Hello"
    terminal.keys("1")
    shown = terminal.wait_for("completed")
    assert "blog.publish:post-1" in shown and "3/3" in shown
    terminal.keys("q")
    deadline = time.monotonic() + 15
    while terminal.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not terminal.alive()  # the app quit and the session ended
