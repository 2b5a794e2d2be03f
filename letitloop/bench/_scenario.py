"""Scenario files: what a benchmark run asks every framework to do, read from TOML.

A scenario names its ``kind`` (``chain``, ``tool``, ``fanout``, ``approval``, ``handoff``) and
its sizes; ``plan`` turns it into the one list of operations every worker follows in its own
framework's idiom. Every operation sits in a *lane* (an agent, or one item of a fan-out) at a
sequence number: a model call at ``2*turn``, the tool call it decides (a side effect, or a
question to a person) at ``2*turn + 1``. That numbering is how the judge tells work the run had
moved past (acknowledged) from work still in flight when it was killed.

The five scenarios shipped with letitloop are in ``letitloop/bench/scenarios/``; ``--scenario
PATH`` adds a file of one's own. A missing or malformed file is a ``ScenarioError`` that names
the file, the field and what would be accepted.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from letitloop.bench._errors import ScenarioError

FORMAT = "lil-bench-scenario/1"
KINDS = ("chain", "tool", "fanout", "approval", "handoff")
EFFECT_KINDS = ("pay", "email")
MAX_BYTES = 64_000  # a scenario file is a page of TOML, never more
SHIPPED = ("chain", "tool", "fanout", "approval", "handoff")


@dataclass(frozen=True)
class Scenario:
    """One scenario, checked: its identity, the model's pace and the plan of operations."""

    name: str
    title: str
    kind: str
    source: str
    latency_ms: int
    reply_words: int
    plan: tuple[dict[str, Any], ...]
    decide_ms: int = 100
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def effects(self) -> int:
        return sum(1 for op in self.plan if op["op"] == "effect")

    @property
    def asks(self) -> int:
        return sum(1 for op in self.plan if op["op"] == "ask")

    @property
    def calls(self) -> int:
        return sum(op.get("items", 1) for op in self.plan if op["op"] in ("call", "fanout"))

    def to_json(self) -> dict[str, Any]:
        """What a worker reads (standard JSON: it may run in another interpreter)."""
        return {
            "name": self.name,
            "title": self.title,
            "kind": self.kind,
            "latency_ms": self.latency_ms,
            "reply_words": self.reply_words,
            "decide_ms": self.decide_ms,
            "plan": list(self.plan),
        }


def shipped_paths() -> list[Path]:
    """The scenario files inside the package, in their fixed order."""
    base = resources.files("letitloop.bench") / "scenarios"
    return [Path(str(base / f"{name}.toml")) for name in SHIPPED]


def load(path: str | Path) -> Scenario:
    """Read and check one scenario file (see the module docstring)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ScenarioError(
            f"scenario file {p} does not exist",
            fix="check the path given to --scenario; `lil bench --list` shows the scenarios "
            "shipped with letitloop",
        ) from None
    except OSError as exc:
        raise ScenarioError(
            f"scenario file {p} cannot be read: {exc.strerror or exc}",
            fix="give a readable TOML file to --scenario",
        ) from None
    if len(raw) > MAX_BYTES:
        raise ScenarioError(
            f"scenario file {p} is {len(raw):,} bytes; a scenario is at most {MAX_BYTES:,}",
            fix="a scenario is a page of TOML: check that --scenario names the right file",
        )
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(
            f"scenario file {p} is not valid TOML: {exc}",
            fix="fix the syntax at that line (compare letitloop/bench/scenarios/chain.toml)",
        ) from None
    return parse(data, str(p))


def parse(data: dict[str, Any], source: str) -> Scenario:
    """Check a scenario's fields and build its plan."""
    check = _Checker(source)
    if data.get("format") != FORMAT:
        check.fail("format", f"is {data.get('format')!r}", f'set format = "{FORMAT}"')
    name = check.text(data, "name")
    kind = check.text(data, "kind")
    if kind not in KINDS:
        check.fail("kind", f"is {kind!r}", f"use one of {', '.join(KINDS)}")
    model = check.table(data, "model")
    latency = check.integer(model, "model.latency_ms", 0, 5000)
    words = check.integer(model, "model.reply_words", 1, 400)
    body = check.table(data, kind)
    decide_ms = 100
    if kind == "chain":
        plan = _chain(check.integer(body, "chain.calls", 1, 200))
    elif kind == "tool":
        plan = _tool(check, body)
    elif kind == "fanout":
        items = check.integer(body, "fanout.items", 1, 64)
        parallel = check.integer(body, "fanout.parallel", 1, 16)
        plan = _fanout(items, parallel)
    elif kind == "approval":
        effect = _effect(check, "approval.effect", check.text(body, "approval.effect"))
        before = check.integer(body, "approval.before", 1, 50)
        after = check.integer(body, "approval.after", 1, 50)
        decide_ms = check.integer(body, "approval.decide_ms", 0, 60_000)
        plan = _approval(before, after, effect)
    else:
        plan = _handoff(check, body)
    title = data.get("title", name)
    if not isinstance(title, str):
        check.fail("title", f"is {title!r}", "give a short text")
    return Scenario(name, title, kind, source, latency, words, tuple(plan), decide_ms, body)


class _Checker:
    """Field checks that fail with the file, the field and the fix."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, name: str, what: str, fix: str) -> None:
        raise ScenarioError(f"scenario file {self.source}: {name} {what}", fix=fix)

    def table(self, data: dict[str, Any], name: str) -> dict[str, Any]:
        value = data.get(name)
        if not isinstance(value, dict):
            self.fail(name, "is missing" if value is None else "is not a table", f"add [{name}]")
        return value  # type: ignore[return-value]

    def text(self, data: dict[str, Any], name: str) -> str:
        value = data.get(name.rsplit(".", 1)[-1])
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            self.fail(name, "is missing" if value is None else f"is {value!r}", "give a text")
        return str(value)

    def integer(self, data: dict[str, Any], name: str, low: int, high: int) -> int:
        value = data.get(name.rsplit(".", 1)[-1])
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            what = "is missing" if value is None else f"is {value!r}"
            self.fail(name, what, f"give a whole number from {low} to {high}")
        return int(value)  # type: ignore[arg-type]


def _call(lane: str, turn: int, **extra: Any) -> dict[str, Any]:
    return {"op": "call", "lane": lane, "seq": 2 * turn, **extra}


def _chain(calls: int) -> list[dict[str, Any]]:
    return [_call("main", t) for t in range(calls)]


def _effect(check: _Checker, name: str, text: str) -> dict[str, Any]:
    parts = text.split()
    if not parts or parts[0] not in EFFECT_KINDS:
        check.fail(name, f"is {text!r}", "write `pay NAME AMOUNT` or `email NAME`")
    if parts[0] == "pay":
        if len(parts) != 3 or not parts[2].isdigit():
            check.fail(name, f"is {text!r}", "write `pay NAME AMOUNT` (a whole amount)")
        return {"kind": "pay", "to": parts[1], "amount": int(parts[2])}
    if len(parts) != 2:
        check.fail(name, f"is {text!r}", "write `email NAME`")
    return {"kind": "email", "to": parts[1]}


def _tool(check: _Checker, body: dict[str, Any]) -> list[dict[str, Any]]:
    actions = body.get("actions")
    if not isinstance(actions, list) or not 1 <= len(actions) <= 50:
        check.fail("tool.actions", f"is {actions!r}", 'give a list such as ["think", "email bob"]')
        actions = []
    plan: list[dict[str, Any]] = []
    for turn, action in enumerate(actions):
        if not isinstance(action, str):
            check.fail("tool.actions", f"holds {action!r}", "each action is a text")
        plan.append(_call("main", turn))
        if action != "think":
            effect = _effect(check, f"tool.actions[{turn}]", action)
            plan.append({"op": "effect", "lane": "main", "seq": 2 * turn + 1, **effect})
    plan.append(_call("main", len(actions)))
    return plan


def _fanout(items: int, parallel: int) -> list[dict[str, Any]]:
    return [
        _call("main", 0),
        {"op": "fanout", "lane": "main", "seq": 1, "items": items, "parallel": parallel},
        _call("main", 1),
    ]


def _approval(before: int, after: int, effect: dict[str, Any]) -> list[dict[str, Any]]:
    plan = [_call("main", t) for t in range(before)]
    plan.append({"op": "ask", "lane": "main", "seq": 2 * before - 1, "name": "send"})
    plan.append(_call("main", before))
    plan.append({"op": "effect", "lane": "main", "seq": 2 * before + 1, **effect})
    plan += [_call("main", before + 1 + t) for t in range(after)]
    return plan


def _handoff(check: _Checker, body: dict[str, Any]) -> list[dict[str, Any]]:
    agents = body.get("agents")
    if not isinstance(agents, list) or not 2 <= len(agents) <= 8:
        check.fail("handoff.agents", "is missing or not 2 to 8 [[handoff.agents]]", "add them")
    plan: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, agent in enumerate(agents):  # type: ignore[arg-type]
        if not isinstance(agent, dict):
            check.fail(f"handoff.agents[{i}]", "is not a table", "give name and turns")
        name = check.text(agent, f"handoff.agents[{i}].name")
        if not name.isidentifier() or name in seen or name == "main":
            check.fail(f"handoff.agents[{i}].name", f"is {name!r}", "use a distinct identifier")
        seen.add(name)
        turns = check.integer(agent, f"handoff.agents[{i}].turns", 1, 20)
        plan += [_call(name, t, agent=name) for t in range(turns)]
    return plan
