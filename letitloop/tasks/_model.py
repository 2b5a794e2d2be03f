"""A task file (``tasks/NAME.toml``) as frozen dataclasses, read with tomllib and checked once.

    goal = "Rename login() to sign_in() everywhere"   # or goal_file = "tasks/auth.md"
    paths = ["src/auth/**", "tests/test_auth.py"]     # what the agent may change
    agents = ["claude", "codex", "gemini"]            # tried in this order
    protect = ["src/api.py::handler"]                 # signatures that must not change

    [limits]
    attempts = 4          # agent invocations in all
    time = 1800           # seconds for the whole task
    agent_timeout = 600   # seconds one invocation may take
    cost_usd = 5.0        # what the agents may report spending

    [[checks]]
    kind = "command"
    run = ["python", "-m", "pytest", "-q"]

Every value is checked when the file is read, so a mistake is reported with the file and the
key before any agent runs. The spec round-trips through plain data (``to_dict``/``from_dict``):
that is what the durable run journals as its argument.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from letitloop.errors import ConfigError, LetItLoopError

CHECK_KINDS = ("python", "command", "regex", "exists", "size", "markdown", "signatures")
MARKDOWN_RULES = ("headings", "front_matter", "links", "fences")


class TaskError(LetItLoopError):
    """A task run cannot go on: every agent failed over, or the limits were reached."""

    title = "task failed"


class TaskStateError(TaskError):
    """A path the task runner was to use would leave the project or pass through a symbolic
    link, or a file it saved under ``.letitloop/tasks/`` was altered: nothing was written."""

    title = "unsafe task path"


class TaskFileError(ConfigError):
    """A task file is missing or holds a value it cannot."""

    title = "invalid task file"


@dataclass(frozen=True)
class Agent:
    """One agent to try: a preset name (``claude``) or a custom command line.

    ``command`` may hold ``{prompt}`` (the prompt as one argument) and ``{prompt_file}`` (a
    file holding it); with ``stdin`` the prompt is written to the agent's standard input.
    """

    name: str
    command: tuple[str, ...]
    stdin: bool = False
    cost_from: str | None = None  # "claude-json": read total_cost_usd from its JSON output


@dataclass(frozen=True)
class Check:
    """One acceptance check; which fields matter depends on ``kind`` (see ``CHECK_KINDS``)."""

    kind: str
    name: str = ""
    paths: tuple[str, ...] = ()  # globs, relative to the task's root
    run: tuple[str, ...] = ()  # command: its argv
    timeout: float = 600.0
    pattern: str = ""  # regex
    present: bool = True  # regex: must match (True) or must not (False)
    min_bytes: int | None = None
    max_bytes: int | None = None
    rules: tuple[str, ...] = MARKDOWN_RULES
    protect: tuple[str, ...] = ()  # signatures: PATH::QUALNAME
    receipt: str = ""  # command: the final run is signed (letitloop.receipts) into this file

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.kind == "command":
            return "command " + " ".join(self.run)
        where = ", ".join(self.paths or self.protect)
        return f"{self.kind} {where}".strip()


@dataclass(frozen=True)
class Limits:
    """What one task may use: agent invocations, wall time, time per invocation, dollars."""

    attempts: int = 3
    time: float = 3600.0
    agent_timeout: float = 900.0
    cost_usd: float | None = None


@dataclass(frozen=True)
class TaskSpec:
    """A whole task: its goal, the paths the agent may change, agents, checks and limits."""

    name: str
    goal: str
    paths: tuple[str, ...]
    agents: tuple[Agent, ...]
    checks: tuple[Check, ...] = ()
    protect: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSpec:
        """The spec a run journaled (``to_dict``'s output), rebuilt."""
        return cls(
            name=data["name"],
            goal=data["goal"],
            paths=tuple(data["paths"]),
            agents=tuple(
                Agent(a["name"], tuple(a["command"]), a["stdin"], a.get("cost_from"))
                for a in data["agents"]
            ),
            checks=tuple(_check_from_dict(c) for c in data["checks"]),
            protect=tuple(data["protect"]),
            limits=Limits(**data["limits"]),
        )


def _check_from_dict(c: dict[str, Any]) -> Check:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in c.items()}
    return Check(**fields)


def task_path(root: Path, name: str) -> Path:
    """``ROOT/tasks/NAME.toml`` for a name, or the file itself for a path ending in .toml."""
    if name.endswith(".toml"):
        return (root / name).resolve()
    if not name or "/" in name or name.startswith("."):
        raise TaskFileError(
            f"{name!r} is not a task name",
            fix="name a file tasks/NAME.toml by its NAME (letters, digits, - and _)",
        )
    return root / "tasks" / f"{name}.toml"


def load_task(root: str | Path, name: str) -> TaskSpec:
    """Read and check ``tasks/NAME.toml`` under ``root``."""
    from letitloop.tasks._agents import resolve_agent

    base = Path(root).resolve()
    path = task_path(base, name)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskFileError(
            f"no task file {path}",
            fix=f"write it (see docs/tasks.md), or list the tasks with `ls {base / 'tasks'}`",
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{path} is not valid TOML: {exc}", fix="fix its syntax") from None
    r = TableReader(data, path)
    r.only("goal", "goal_file", "paths", "agents", "checks", "limits", "protect")
    goal = r.text("goal", "")
    goal_file = r.text("goal_file", "")
    if bool(goal) == bool(goal_file):
        raise TaskFileError(
            f"{path}: give exactly one of goal (the prompt text) and goal_file (a file holding it)",
            fix='e.g. goal = "Make tests/test_auth.py pass"',
        )
    if goal_file:
        try:
            goal = (base / goal_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise TaskFileError(
                f"{path}: goal_file {goal_file!r} cannot be read: {exc.strerror or exc}",
                fix="paths in a task file are relative to the project root",
            ) from None
    paths = r.strings("paths")
    if not paths:
        raise TaskFileError(
            f"{path}: paths is empty: the agent may change nothing",
            fix='list what it may change, e.g. paths = ["src/**", "tests/**"]',
        )
    raw_agents = data.get("agents", [])
    if not isinstance(raw_agents, list) or not raw_agents:
        raise TaskFileError(
            f"{path}: agents must be a non-empty list of preset names or tables",
            fix='e.g. agents = ["claude", "codex"] or [[agents]] name = "mine" command = [...]',
        )
    agents = tuple(resolve_agent(a, f"{path}: agents[{i}]") for i, a in enumerate(raw_agents))
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise TaskFileError(f"{path}: agent names repeat: {names}", fix="give each its own name")
    raw_checks = data.get("checks", [])
    if not isinstance(raw_checks, list):
        raise TaskFileError(f"{path}: checks must be [[checks]] tables")
    checks = tuple(_check(c, f"{path}: checks[{i}]") for i, c in enumerate(raw_checks))
    limits = _limits(data.get("limits", {}), f"{path}: [limits]")
    return TaskSpec(path.stem, goal, paths, agents, checks, r.strings("protect"), limits)


class TableReader:
    """Typed reads of one TOML table, each error naming the file and the key."""

    def __init__(self, table: dict[str, Any], where: str | Path) -> None:
        self.table, self.where = table, str(where)

    def only(self, *known: str) -> None:
        """Refuse keys not in ``known``, before anything else is checked: each is named with the
        nearest known key, so a misspelt ``pahts`` is reported as itself, not as a missing
        ``paths``."""
        unknown = sorted(set(self.table) - set(known))
        if unknown:
            raise TaskFileError(
                f"{self.where}: unknown key{'s' if len(unknown) > 1 else ''} "
                + ", ".join(_with_nearest(key, known) for key in unknown),
                fix=f"the keys here are {', '.join(known)}",
            )

    def text(self, key: str, default: str) -> str:
        value = self.table.get(key, default)
        if not isinstance(value, str):
            raise TaskFileError(f"{self.where}: {key} must be a string, got {value!r}")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise TaskFileError(f"{self.where}: {key} must be a list of strings, got {value!r}")
        return tuple(value)

    def number(self, key: str, default: float | None, *, whole: bool = False) -> Any:
        value = self.table.get(key, default)
        if value is None:
            return None
        ok = isinstance(value, int if whole else (int, float)) and not isinstance(value, bool)
        if not ok or not 0 < value < 10**9:
            kind = "a whole number" if whole else "a number"
            raise TaskFileError(f"{self.where}: {key} must be {kind} > 0, got {value!r}")
        return value


def _with_nearest(key: str, known: tuple[str, ...]) -> str:
    import difflib

    near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"{key!r} (did you mean {near[0]!r}?)" if near else repr(key)


CHECK_KEYS = (
    *("kind", "name", "paths", "path", "run", "timeout", "pattern", "present", "rules"),
    *("min_bytes", "max_bytes", "protect", "receipt"),
)


def _check(raw: object, where: str) -> Check:
    if not isinstance(raw, dict):
        raise TaskFileError(f"{where} must be a table with kind = ...")
    r = TableReader(raw, where)
    r.only(*CHECK_KEYS)
    kind = r.text("kind", "")
    if kind not in CHECK_KINDS:
        raise TaskFileError(
            f"{where}: unknown kind {kind!r}", fix=f"use one of {', '.join(CHECK_KINDS)}"
        )
    run = raw.get("run", [])
    if isinstance(run, str):
        import shlex

        run = shlex.split(run)
    if kind == "command" and (not run or not all(isinstance(a, str) for a in run)):
        raise TaskFileError(f"{where}: a command check needs run = [argv...]")
    rules = r.strings("rules") or MARKDOWN_RULES
    if bad := [x for x in rules if x not in MARKDOWN_RULES]:
        raise TaskFileError(f"{where}: unknown markdown rules {bad}", fix=f"use {MARKDOWN_RULES}")
    paths = r.strings("paths") or r.strings("path")
    if kind in ("regex", "exists", "size") and not paths:
        raise TaskFileError(f"{where}: a {kind} check needs paths = [...]")
    pattern = r.text("pattern", "")
    if kind == "regex":
        import re

        try:
            re.compile(pattern, re.M)
        except re.error as exc:
            raise TaskFileError(f"{where}: pattern {pattern!r} is not a regex: {exc}") from None
    present = raw.get("present", True)
    if not isinstance(present, bool):
        raise TaskFileError(f"{where}: present must be true or false")
    receipt = r.text("receipt", "")
    if receipt and kind != "command":
        raise TaskFileError(f"{where}: only a command check can have a receipt")
    if receipt:
        from letitloop.tasks._files import tree_path

        try:
            tree_path(receipt.removeprefix("./"))
        except TaskStateError:
            raise TaskFileError(
                f"{where}: receipt {receipt!r} is not a path inside the project",
                fix='name a file relative to the project root, e.g. receipt = "build/r.json"',
            ) from None
        receipt = receipt.removeprefix("./")
    return Check(
        kind=kind,
        name=r.text("name", ""),
        paths=paths,
        run=tuple(run),
        timeout=r.number("timeout", 600.0),
        pattern=pattern,
        present=present,
        min_bytes=r.number("min_bytes", None, whole=True),
        max_bytes=r.number("max_bytes", None, whole=True),
        rules=rules,
        protect=r.strings("protect"),
        receipt=receipt,
    )


def _limits(raw: object, where: str) -> Limits:
    if not isinstance(raw, dict):
        raise TaskFileError(f"{where} must be a table")
    r = TableReader(raw, where)
    r.only("attempts", "time", "agent_timeout", "cost_usd")
    return Limits(
        attempts=r.number("attempts", 3, whole=True),
        time=r.number("time", 3600.0),
        agent_timeout=r.number("agent_timeout", 900.0),
        cost_usd=r.number("cost_usd", None),
    )
