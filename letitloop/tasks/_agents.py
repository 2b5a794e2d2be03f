"""Agent presets (headless coding CLIs, each invoked the way its own docs say) and running one.

    claude   claude -p --permission-mode acceptEdits --output-format json   (prompt on stdin)
    codex    codex exec --sandbox workspace-write --skip-git-repo-check -    (prompt on stdin)
    gemini   gemini --approval-mode auto_edit -p PROMPT
    aider    aider --yes-always --no-auto-commits --no-stream --message-file PROMPT_FILE

None of them needs an API key here: each uses whatever login its CLI already has. A custom
agent is any command line, with ``{prompt}`` / ``{prompt_file}`` placeholders or the prompt on
stdin. An invocation that cannot start, exits non-zero or runs past its timeout is reported as
a failover reason, never raised: the runner hands the task to the next agent.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from letitloop.tasks._model import Agent, TableReader, TaskFileError

PRESETS: dict[str, Agent] = {
    "claude": Agent(
        "claude",
        ("claude", "-p", "--permission-mode", "acceptEdits", "--output-format", "json"),
        stdin=True,
        cost_from="claude-json",
    ),
    "codex": Agent(
        "codex",
        ("codex", "exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "-"),
        stdin=True,
    ),
    "gemini": Agent("gemini", ("gemini", "--approval-mode", "auto_edit", "-p", "{prompt}")),
    "aider": Agent(
        "aider",
        ("aider", "--yes-always", "--no-auto-commits", "--no-stream", "--message-file")
        + ("{prompt_file}",),
    ),
}
_TAIL = 4000  # characters of an agent's stdout/stderr kept in the journal


def resolve_agent(raw: object, where: str) -> Agent:
    """A task file's agent entry: a preset name, or a table (``name``, and ``command`` or
    ``preset`` plus optional ``args`` appended to it, ``stdin``)."""
    if isinstance(raw, str):
        if raw not in PRESETS:
            raise TaskFileError(
                f"{where}: no agent preset {raw!r}",
                fix=f"use one of {', '.join(PRESETS)}, or a table with command = [...]",
            )
        return PRESETS[raw]
    if not isinstance(raw, dict):
        raise TaskFileError(f"{where} must be a preset name or a table")
    TableReader(raw, where).only("name", "preset", "command", "args", "stdin")
    preset = raw.get("preset")
    command = raw.get("command")
    if isinstance(command, str):
        import shlex

        command = shlex.split(command)
    args = raw.get("args", [])
    if (preset is None) == (command is None):
        raise TaskFileError(
            f"{where}: give exactly one of preset (a known CLI) and command (an argv list)",
            fix='e.g. { name = "mine", command = ["./agent.sh", "{prompt}"] }',
        )
    lists = [command] if command is not None else []
    if not all(isinstance(x, list) and all(isinstance(a, str) for a in x) for x in [*lists, args]):
        raise TaskFileError(f"{where}: command and args must be lists of strings")
    if preset is not None:
        if preset not in PRESETS:
            raise TaskFileError(f"{where}: no agent preset {preset!r}", fix=f"use {list(PRESETS)}")
        base = PRESETS[preset]
        name = raw.get("name", preset)
        stdin = raw.get("stdin", base.stdin)
        argv = (*base.command, *args)
        cost_from = base.cost_from
    else:
        name = raw.get("name")
        stdin = raw.get("stdin", False)
        argv = (*command, *args)  # type: ignore[misc]
        cost_from = None
    if not isinstance(name, str) or not name or not name.isprintable():
        raise TaskFileError(f'{where}: a custom agent needs name = "..."')
    if not argv:
        raise TaskFileError(f"{where}: command is empty")
    if not isinstance(stdin, bool):
        raise TaskFileError(f"{where}: stdin must be true or false")
    return Agent(name, tuple(argv), stdin, cost_from)


@dataclass(frozen=True)
class AgentRun:
    """What one invocation did: its argv, exit code, time, output tails and, if it failed, why."""

    argv: tuple[str, ...]
    exit_code: int | None
    duration: float
    stdout: str
    stderr: str
    failure: str | None  # None: it ran and exited 0
    cost_usd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "argv": list(self.argv),
            "exit_code": self.exit_code,
            "duration": round(self.duration, 3),
            "stdout": self.stdout,
            "stderr": self.stderr,
            "failure": self.failure,
            "cost_usd": self.cost_usd,
        }


def run_agent(agent: Agent, prompt: str, cwd: Path, timeout: float) -> AgentRun:
    """Run ``agent`` on ``prompt`` in ``cwd`` for at most ``timeout`` seconds."""
    with tempfile.TemporaryDirectory(prefix="lil-task-") as tmp:
        prompt_file = Path(tmp) / "prompt.md"
        prompt_file.write_text(prompt, encoding="utf-8")
        argv = tuple(
            a.replace("{prompt_file}", str(prompt_file)).replace("{prompt}", prompt)
            for a in agent.command
        )
        shown = agent.command  # the template: the prompt itself is journaled on its own
        exe = shutil.which(argv[0], path=os.environ.get("PATH")) if "/" not in argv[0] else argv[0]
        if exe is None or not os.access(exe, os.X_OK):
            return AgentRun(shown, None, 0.0, "", "", f"not installed ({argv[0]} is not on PATH)")
        started = time.monotonic()
        try:
            code, out, err, timed_out = run_process(
                [exe, *argv[1:]], cwd, prompt.encode() if agent.stdin else None, timeout
            )
        except OSError as exc:
            return AgentRun(shown, None, 0.0, "", "", f"{argv[0]} cannot start: {exc}")
        failure = None if code == 0 else f"exited {code}"
        if timed_out:
            failure = f"timed out after {timeout:.3g} s"
        duration = time.monotonic() - started
    stdout, stderr = _tail(out), _tail(err)
    cost = _cost(stdout) if agent.cost_from == "claude-json" else None
    return AgentRun(shown, code, duration, stdout, stderr, failure, cost)


def run_process(
    argv: list[str], cwd: Path, stdin: bytes | None, timeout: float
) -> tuple[int, bytes, bytes, bool]:
    """Run a command in its own session (a timeout kills it and everything it started) that
    dies with this process; (exit code, stdout, stderr, timed out). Agents and check commands
    both run this way."""
    child = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    try:
        out, err = child.communicate(stdin, timeout)
        return child.returncode, out, err, False
    except subprocess.TimeoutExpired:
        _kill_group(child)
        out, err = child.communicate()
        return child.returncode, out, err, True


def _die_with_parent() -> None:
    """In the agent's process: get SIGKILL when the runner dies, so a runner killed mid-attempt
    leaves no agent editing files behind while the resumed runner starts the attempt again."""
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(data: bytes | None) -> str:
    text = (data or b"").decode("utf-8", "replace")
    return text if len(text) <= _TAIL else "…" + text[-_TAIL:]


def _cost(stdout: str) -> float | None:
    """``total_cost_usd`` from ``claude -p --output-format json``'s result object, if there."""
    try:
        value = json.loads(stdout).get("total_cost_usd")
    except (ValueError, AttributeError):
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6
    return float(value) if ok else None
