"""Every tool ``lil mcp`` offers, declared once: its name, what it returns, and the JSON schema
of its arguments, every string, list and number bounded.

``check`` validates a call's arguments against the schema (with jsonschema, which the mcp SDK
brings) before anything runs, and says which argument is wrong in a sentence that never echoes
the argument back (an agent's huge or hostile input stays out of the answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from letitloop.errors import ConfigError

RUN = {
    "type": "string",
    "minLength": 1,
    "maxLength": 300,
    "description": "A run id, or an unambiguous prefix or suffix of one.",
}
CURSOR = {
    "type": "string",
    "maxLength": 20,
    "description": "The next_cursor of the page before, to read the next page.",
}
STATUSES = ["running", "interrupted", "suspended", "completed", "failed", "cancelled", "reset"]
STEP = {
    "type": ["integer", "string"],
    "minimum": 0,
    "maximum": 1_000_000_000,
    "maxLength": 300,
    "description": "A step's position, or its name.",
}


def _text(most: int, description: str) -> dict[str, Any]:
    return {"type": "string", "maxLength": most, "description": description}


def _limit(default: int, most: int) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": most,
        "default": default,
        "description": f"How many to return (at most {most}).",
    }


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, description, argument schema, and whether it acts on the journal."""

    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...] = ()
    act: bool = False

    @property
    def schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


READ_TOOLS = (
    ToolSpec(
        "list_runs",
        "Runs newest first, filtered by status, workflow, time and text: for each its status, "
        "steps done out of known, duration, cost, error with its fix, and the actions a person "
        "may take. Paged: pass next_cursor to read on.",
        {
            "status": {"type": "string", "enum": STATUSES},
            "workflow": _text(300, "Only runs of this workflow (module.qualname)."),
            "since": _text(40, "Only runs updated since: 30m, 12h, 7d, 2w, or a date."),
            "text": _text(200, "Only runs whose id or workflow contains this text."),
            "limit": _limit(10, 100),
            "cursor": CURSOR,
        },
    ),
    ToolSpec(
        "show_run",
        "One run in full: its summary, each step with its attempts (errors with their fix), "
        "its result preview, the approvals it waits for, its side effects in doubt, its map "
        "items, and who intervened on it. Attempts are paged.",
        {"run": RUN, "attempts_limit": _limit(20, 200), "cursor": CURSOR},
        ("run",),
    ),
    ToolSpec(
        "step_output",
        "The output of one step (its latest attempt, or the one given) as text, never "
        "executed: a page of `length` characters from `offset`; next_offset reads on.",
        {
            "run": RUN,
            "position": {"type": "integer", "minimum": 0, "maximum": 1_000_000_000},
            "attempt": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
            "offset": {"type": "integer", "minimum": 0, "maximum": 1 << 20, "default": 0},
            "length": {"type": "integer", "minimum": 1, "maximum": 16_000, "default": 2000},
        },
        ("run", "position"),
    ),
    ToolSpec(
        "effects_in_doubt",
        "Side effects in doubt (a block under atomic_marker that started and never recorded "
        "completion), in one run or all: why each is in doubt and the command a person runs "
        "to resolve it. Resolving is a person's decision.",
        {"run": RUN, "limit": _limit(10, 100), "cursor": CURSOR},
    ),
    ToolSpec(
        "approvals",
        "Approval requests (pending by default): what each run asks about and its deadline. "
        "Approving or rejecting is a person's decision, and the answer says where they take it.",
        {
            "status": {"type": "string", "enum": ["pending", "approved", "rejected", "cancelled"]},
            "run": RUN,
            "limit": _limit(10, 100),
            "cursor": CURSOR,
        },
    ),
    ToolSpec(
        "splice_proposals",
        "Splice proposals (a change to one definition an agent proposed), with their diff and "
        "state. Applying one is a person's decision.",
        {
            "state": {"type": "string", "enum": ["pending", "applied", "rejected", "conflict"]},
            "limit": _limit(5, 50),
            "cursor": CURSOR,
        },
    ),
    ToolSpec(
        "notifications",
        "The notification outbox, newest first: event, run, delivery state, tries, last error.",
        {
            "state": {"type": "string", "enum": ["pending", "delivered", "failed"]},
            "limit": _limit(10, 100),
            "cursor": CURSOR,
        },
    ),
    ToolSpec(
        "rate_limits",
        "Each shared rate limit's bucket now: requests and tokens left, and any Retry-After block.",
        {},
    ),
    ToolSpec(
        "journal_sql",
        "Run one read-only SELECT on the journal (as `lil journal sql`): tables runs, steps, "
        "events, approvals, proposals; views step_facts and run_facts. At most `limit` rows.",
        {"query": _text(8000, "One SELECT statement."), "limit": _limit(50, 500)},
        ("query",),
    ),
    ToolSpec(
        "queues",
        "Queued runs and who runs them (as `lil queue list`): each queue's depth, runs held by "
        "workers and by their callers, the oldest wait, limits and pause; each worker's host, "
        "pid, state, heartbeat age and the runs it holds; and orphaned runs no worker takes "
        "over, with the command that resumes each.",
        {"limit": _limit(50, 200)},
    ),
    ToolSpec(
        "report",
        "Where the time and money went (as `lil report`): runs, failures, cost, tokens, cost "
        "per workflow and model, slowest steps, failure rates, per-day series.",
        {
            "since": _text(40, "Only what happened since: 30m, 12h, 7d, 2w, or a date."),
            "top": _limit(5, 20),
        },
    ),
)

ACT_SPECS = (
    ToolSpec(
        "resume_run",
        "Resume an interrupted, failed or suspended run in a new process (refused, with the "
        "cause, when it cannot be resumed). Journaled with your client's name.",
        {"run": RUN},
        ("run",),
        act=True,
    ),
    ToolSpec(
        "retry_run",
        "Give a dead-lettered step of a failed run new attempts; resume the run to try again.",
        {"run": RUN, "step": STEP},
        ("run",),
        act=True,
    ),
    ToolSpec(
        "raise_budget",
        "Set or raise a run's budget in dollars and/or tokens; a run its budget suspended "
        "continues when resumed. Journaled with your client's name.",
        {
            "run": RUN,
            "usd": {"type": "number", "exclusiveMinimum": 0, "maximum": 1_000_000},
            "tokens": {"type": "integer", "minimum": 1, "maximum": 1_000_000_000_000},
        },
        ("run",),
        act=True,
    ),
    ToolSpec(
        "cancel_run",
        "Stop a run for good: its process stops at its next journal write; a person can reset "
        "it later.",
        {"run": RUN, "reason": _text(1000, "Why; shown with the run.")},
        ("run",),
        act=True,
    ),
    ToolSpec(
        "fork_run",
        "Fork a run: a new run that reuses every journaled step before `from_step` and runs "
        "from there when resumed (optionally with new arguments). The source is untouched.",
        {
            "run": RUN,
            "from_step": STEP,
            "key": _text(300, "The fork's run key (default: the run's, plus a suffix)."),
            "args": {"type": "array", "maxItems": 100, "description": "New positional args."},
            "kwargs": {"type": "object", "maxProperties": 100, "description": "New keywords."},
        },
        ("run", "from_step"),
        act=True,
    ),
    ToolSpec(
        "propose_splice",
        "Propose replacing one def or class (by qualified name) in a file of the project; a "
        "person reviews the diff and applies or rejects it. It must apply cleanly now.",
        {
            "path": _text(1000, "The file, relative to the project root."),
            "target": _text(300, "The qualified name, e.g. Service.fetch."),
            "code": _text(100_000, "The new source of the definition."),
            "reason": _text(2000, "Why, for the person who reviews it."),
        },
        ("path", "target", "code"),
        act=True,
    ),
    ToolSpec(
        "start_task",
        "Start (or continue) the coding-agent task tasks/NAME.toml of the project, as `lil run "
        "--task NAME` in a new process.",
        {
            "task": {
                "type": "string",
                "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$",
                "description": "The task's name (tasks/NAME.toml).",
            },
            "strict": {"type": "boolean", "default": False},
            "review": {"type": "boolean", "default": False},
        },
        ("task",),
        act=True,
    ),
    ToolSpec(
        "verify_receipt",
        "Verify a signed CI receipt (as `lil receipt verify`, never re-running its command): "
        "its signature, commit, protected signatures and outcome, each check named.",
        {
            "path": _text(1000, "The receipt file, relative to the project root."),
            "commit": _text(100, "The commit it must be for (default: HEAD)."),
            "allow_failures": {"type": "boolean", "default": False},
        },
        ("path",),
        act=True,
    ),
)
TOOLS = {t.name: t for t in (*READ_TOOLS, *ACT_SPECS)}


class BadArguments(ConfigError):
    """A tool call whose arguments do not match the tool's schema: nothing ran."""

    title = "bad arguments"


def check(spec: ToolSpec, arguments: Any) -> dict[str, Any]:
    """The arguments with defaults filled in, or ``BadArguments`` naming the first wrong one."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    args = {} if arguments is None else arguments
    if not isinstance(args, dict):
        raise BadArguments(
            f"{spec.name}: arguments must be an object", fix="send named arguments {...}"
        )
    errors = sorted(Draft202012Validator(spec.schema).iter_errors(args), key=lambda e: e.path)
    if errors:
        raise BadArguments(f"{spec.name}: {_said(errors[0])}", fix=_fix(spec))
    filled = {k: v.get("default") for k, v in spec.properties.items() if "default" in v}
    return filled | args


def _said(error: Any) -> str:
    """A schema error in words, without the offending value."""
    where = ".".join(str(p) for p in error.absolute_path) or "the arguments"
    kind, bound = error.validator, error.validator_value
    if kind == "additionalProperties":
        extra = [str(k)[:40] for k in error.instance if k not in error.schema.get("properties", {})]
        return f"unknown argument {', '.join(map(repr, extra[:3]))}"
    if kind == "required":
        return f"missing argument: {error.message.split(' ')[0]}"
    words = {
        "type": f"must be of type {bound}",
        "maxLength": f"is longer than {bound} characters",
        "minLength": f"is shorter than {bound} characters",
        "maxItems": f"has more than {bound} items",
        "maxProperties": f"has more than {bound} keys",
        "minimum": f"is below {bound}",
        "maximum": f"is above {bound}",
        "exclusiveMinimum": f"must be above {bound}",
        "enum": f"must be one of {', '.join(map(str, bound))}" if kind == "enum" else "",
        "pattern": "is not a name (letters, digits, '.', '_' and '-', up to 100)",
    }
    return f"argument {where} {words.get(kind, f'fails {kind}')}"


def _fix(spec: ToolSpec) -> str:
    names = ", ".join(
        f"{k}{'' if k in spec.required else '?'}: {_kind(v)}" for k, v in spec.properties.items()
    )
    return f"call {spec.name} with {{{names}}}" if names else f"call {spec.name} with {{}}"


def _kind(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "|".join(prop["enum"])
    kind = prop.get("type", "any")
    return "/".join(kind) if isinstance(kind, list) else str(kind)
