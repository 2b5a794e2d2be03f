"""What ``lil mcp`` may do and how much it answers: every bound declared once.

``Limits`` holds the server's bounds (message and page sizes, queues, deadlines), each with an
environment override for tests and unusual set-ups. ``Settings`` is what the user allowed in
``[tool.letitloop.mcp]`` of their pyproject.toml, read through the journal's ``tool_table``:
which act tools an agent may call. Read tools are always there; a person's decisions (approve,
reject, resolve an effect, apply a splice) can never be allowed.

    [tool.letitloop.mcp]
    allow = ["resume_run", "cancel_run", "propose_splice"]
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from letitloop.errors import ConfigError

# the act tools a user may allow, by the name an agent calls them
ACT_TOOLS = (
    "resume_run",
    "retry_run",
    "raise_budget",
    "cancel_run",
    "fork_run",
    "propose_splice",
    "start_task",
    "verify_receipt",
)
# a person's decisions: never a tool, whatever the configuration says
PERSON_ONLY = {
    "approve": "approving an approval",
    "reject": "rejecting an approval",
    "approve_approval": "approving an approval",
    "reject_approval": "rejecting an approval",
    "decide_approval": "deciding an approval",
    "resolve_effect": "resolving a side effect in doubt",
    "apply_splice": "applying a splice proposal",
}
WHERE_PEOPLE_DECIDE = (
    "a person decides this in the lab's inbox (JupyterLab), in lil-tui, or with "
    "`lil approvals approve|reject ID`, `lil effects resolve RUN MARKER --done|--redo`, "
    "`lil splice apply|reject ID`"
)
SECTION = "[tool.letitloop.mcp]"


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number", fix=f"unset {name}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be above 0, got {raw}", fix=f"unset {name}")
    return value


@dataclass(frozen=True)
class Limits:
    """The server's bounds: what one message, one answer and one client may take."""

    max_message: int = 1 << 20  # bytes of one JSON-RPC message read (stdio) or HTTP body
    max_result: int = 40_000  # characters of one tool answer's JSON
    out_queue: int = 64  # messages waiting for a slow client before it is dropped
    in_flight: int = 32  # requests read and not yet answered (stdio): past that, reading waits
    write_seconds: float = 30.0  # a client that reads nothing this long is dropped
    call_seconds: float = 60.0  # one tool call's deadline
    workers: int = 4  # journal calls in flight at once
    follows: int = 64  # runs one server follows for subscribers
    sessions: int = 16  # concurrent HTTP sessions
    session_idle: float = 600.0  # seconds before an idle HTTP session is closed

    @classmethod
    def from_env(cls) -> Limits:
        """The defaults, with ``LIL_MCP_WRITE_SECONDS`` and ``LIL_MCP_CALL_SECONDS`` applied."""
        return cls(
            write_seconds=_env_number("LIL_MCP_WRITE_SECONDS", cls.write_seconds),
            call_seconds=_env_number("LIL_MCP_CALL_SECONDS", cls.call_seconds),
        )


@dataclass(frozen=True)
class Settings:
    """What the user allowed: the act tools an agent may call, and the file that says so."""

    allow: frozenset[str] = field(default_factory=frozenset)
    source: Path | None = None  # the pyproject.toml holding the section, if any

    def where(self) -> str:
        return f"{SECTION} of {self.source}" if self.source else f"{SECTION} of pyproject.toml"

    def refusal(self, tool: str) -> ConfigError:
        """The error for an act tool the user did not allow, naming the setting to change."""
        return ConfigError(
            f"the tool {tool} is not enabled: agents may call it only when the user allows it",
            fix=f'add "{tool}" to allow in {self.where()}, e.g. allow = ["{tool}"], and '
            "restart lil mcp",
        )


def person_only_refusal(name: str) -> ConfigError:
    """The error for a person's decision asked of the server (it is never a tool)."""
    what = PERSON_ONLY.get(name, "this decision")
    return ConfigError(
        f"{what} is a person's decision, not an agent's: lil mcp has no such tool",
        fix=WHERE_PEOPLE_DECIDE,
    )


def load_settings(root: Path) -> Settings:
    """``[tool.letitloop.mcp]`` of the nearest pyproject.toml at or above ``root``."""
    from letitloop.journal import tool_table

    table, source = tool_table("mcp", root)
    where = f"{SECTION} in {source}"
    unknown = [k for k in table if k != "allow"]
    if unknown:
        near = difflib.get_close_matches(unknown[0], ["allow"], n=1, cutoff=0.5)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ConfigError(
            f"{where} has an unknown key {unknown[0]!r}{hint}"[:300],
            fix='the one key is allow, a list of act tools, e.g. allow = ["resume_run"]',
        )
    allow = table.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(x, str) for x in allow):
        raise ConfigError(
            f"allow in {where} must be a list of tool names"[:300],
            fix=f"e.g. allow = {list(ACT_TOOLS[:2])!r}".replace("'", '"'),
        )
    for name in allow:
        if name in PERSON_ONLY:
            raise ConfigError(
                f"allow in {where} names {name!r}: {PERSON_ONLY[name]} is a person's decision "
                "and never an agent's",
                fix=f"remove {name!r}; {WHERE_PEOPLE_DECIDE}",
            )
        if name not in ACT_TOOLS:
            near = difflib.get_close_matches(name, ACT_TOOLS, n=1, cutoff=0.5)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(
                f"allow in {where} names an unknown tool {name[:80]!r}{hint}",
                fix="the act tools: " + ", ".join(ACT_TOOLS),
            )
    return Settings(frozenset(allow), source)
