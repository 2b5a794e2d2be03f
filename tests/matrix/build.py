"""Build the matrix scenario on a backend: a project, a webhook receiver, real processes.

``build`` writes the project (its workflows, a task, files to splice, notifications that go to
a receiver on 127.0.0.1 which takes ``run_failed`` and refuses ``approval_waiting``), runs the
scenario's first process and SIGKILLs it inside a step and inside side effects, waits until the
journal says those runs were interrupted, then lets a second process complete the killed run
and wait until every notification is delivered or failed. The memory backend gets the DuckDB
scenario's records copied into a ``MemoryJournal`` (no other process can write to a journal in
this process's memory: the kills happen on DuckDB, the memory journal holds what they left).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import child_env, kill_when_ready, run_lil, wait_until
from tests.notify.receiver import Receiver

HERE = Path(__file__).resolve().parent
# the surfaces that act, each on runs of its own (their keys); memory has only in-process ones
ACTING = ("op", "cli", "rest", "mcp", "tui", "nb", "lsp")
IN_PROCESS = ("op", "tui", "nb")
AGENT = """
import pathlib
pathlib.Path("src").mkdir(exist_ok=True)
pathlib.Path("src/out.txt").write_text("done\\n")
"""
TAKEN, REFUSED = "run_failed", "approval_waiting"  # what the receiver takes and refuses


@dataclass
class Scenario:
    """A built scenario: where it lives, how its processes are started, and the journal."""

    backend: str  # memory | duckdb | postgres
    project: Path
    location: str  # a DuckDB file or a postgresql:// URL (":memory:" for memory)
    env: dict[str, str]
    receiver: Receiver | None
    journal: Any = None  # this process's journal on it
    acting: tuple[str, ...] = ACTING
    notes: dict[str, Any] = field(default_factory=dict)

    def lil(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``lil ARGS`` as a real subprocess in the project."""
        done = run_lil(*args, env=self.env, cwd=self.project)
        if check:
            assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
        return done


def make_project(root: Path, location: str, receiver_url: str) -> tuple[Path, dict[str, str]]:
    """The project (its pyproject.toml's notification and MCP settings, the workflows, a task
    with a stand-in agent, a file to splice) and the environment of its processes."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(f"""
        [project]
        name = "matrix"

        [tool.letitloop.mcp]
        allow = ["resume_run", "retry_run", "cancel_run", "fork_run", "raise_budget",
                 "propose_splice", "start_task"]

        [tool.letitloop.notify]
        events = ["{TAKEN}", "{REFUSED}"]
        max_tries = 1
        backoff = 0.1
        timeout = 5.0
        """)
    )
    shutil.copy(HERE / "flows.py", root / "flows.py")
    (root / "app.py").write_text('def greet(name):\n    return f"Hello, {name}"\n')
    (root / "agent.py").write_text(AGENT)
    (root / "tasks").mkdir(exist_ok=True)
    (root / "tasks" / "write.toml").write_text(
        textwrap.dedent(f"""
        goal = "write src/out.txt"
        paths = ["src/**"]
        agents = [{{ name = "stand-in", command = ["{sys.executable}", "agent.py"] }}]

        [[checks]]
        kind = "exists"
        paths = ["src/out.txt"]
        """)
    )
    env = {k: v for k, v in child_env(location).items() if not k.startswith("LIL_NOTIFY")}
    env |= {
        "LIL_NOTIFY_URL": receiver_url,
        "LIL_NOTIFY_SECRET": "matrix-secret",
        "LIL_LEASE_TTL": "3",
    }
    return root, env


def build(backend: str, root: Path, location: str) -> Scenario:
    """The scenario on a DuckDB file or a PostgreSQL database (see the module docstring)."""
    from letitloop.journal import open_journal

    receiver = Receiver(by_event={TAKEN: 200, REFUSED: 503})
    project, env = make_project(root, location, receiver.url)
    scenario = Scenario(backend, project, location, env, receiver)
    started = time.monotonic()
    _first(scenario)
    journal = open_journal(location)
    interrupted = ["flows.slow:d"] + [f"flows.effect:c-{w}" for w in ("base", *ACTING)]
    wait_until(
        lambda: all(journal.get_run(r).run.status == "interrupted" for r in interrupted),
        60,
        what="the killed runs to read as interrupted",
    )
    second = subprocess.run(
        [sys.executable, str(HERE / "scenario.py"), str(project), "second"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert second.returncode == 0 and "done" in second.stdout, second.stderr[-3000:]
    scenario.journal = journal
    scenario.notes["build_seconds"] = time.monotonic() - started
    return scenario


def _first(scenario: Scenario) -> None:
    """The first process, SIGKILLed (its whole group) once its blocked runs are inside."""
    kill_when_ready(
        [sys.executable, str(HERE / "scenario.py"), str(scenario.project), "first", *ACTING],
        cwd=scenario.project,
        env=scenario.env,
    )


def on_memory(source: Scenario) -> Scenario:
    """The DuckDB scenario's records in a ``MemoryJournal`` (copied through the contract)."""
    from letitloop.journal import MemoryJournal, copy_journal

    memory = MemoryJournal()
    copy_journal(source.journal, memory)
    scenario = Scenario(
        "memory", source.project, ":memory:", source.env, None, memory, acting=IN_PROCESS
    )
    scenario.notes["source"] = source
    return scenario
