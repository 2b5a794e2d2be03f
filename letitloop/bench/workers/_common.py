"""What every worker shares: the spec, the counter server's client, the scenario's data flow.

Standard library only: a worker runs in its framework's own interpreter, where letitloop may be
importable (this package is put on its path) but its dependencies need not be.

The data flow is the same for every framework. A model call's prompt carries the token of the
reply before it (``tok-XXXXXXXX``); the reduce of a fan-out carries every item's token; a side
effect's memo is the token of the call that decided it. The final answer is the last reply's
text. A framework that resumes with state lost therefore answers differently from a clean run.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from typing import Any


def load_spec() -> dict[str, Any]:
    """The spec the harness wrote for this worker (path in argv[1])."""
    with open(sys.argv[1]) as f:
        spec: dict[str, Any] = json.load(f)
    return spec


def token_of(text: str) -> str:
    """The token a reply ends with."""
    return text.rsplit("tok-", 1)[-1][:8] if "tok-" in text else ""


def call_prompt(op: dict[str, Any], prev: str) -> str:
    """The prompt of a plan's model call, given the token before it."""
    where = f"[{op['lane']}/{op['seq']}]"
    return f"{where} continue from tok-{prev}" if prev else f"{where} begin the task"


def item_prompt(i: int, prev: str) -> str:
    return f"[item-{i}/0] analyze item {i} for tok-{prev}"


def reduce_prompt(op: dict[str, Any], tokens: list[str]) -> str:
    return f"[{op['lane']}/{op['seq']}] combine " + " ".join(f"tok-{t}" for t in tokens)


class Bench:
    """The counter server, as a worker sees it (every request names the run and this pid)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.url = str(spec["server"])
        self.run = str(spec["run"])
        self.scenario: dict[str, Any] = spec["scenario"]
        self.plan: list[dict[str, Any]] = self.scenario["plan"]
        self.planted = str(spec.get("planted") or "")
        self.durable = str(spec.get("framework", "")).endswith("-lil")  # the framework + letitloop
        self.ops = {f"{op['lane']}/{op['seq']}": op for op in self.plan}

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps({**body, "run": self.run, "pid": os.getpid()}).encode()
        req = urllib.request.Request(
            self.url + path, data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=300) as resp:
            out: dict[str, Any] = json.loads(resp.read())
        return out

    def model(self, lane: str, seq: int, prompt: str) -> dict[str, Any]:
        """One model call: the reply's ``text``, ``token`` and ``usage``."""
        out = self.post("/model", {"lane": lane, "seq": seq, "prompt": prompt})
        if out.get("balloon"):
            balloon()
        return out

    def effect(self, op: dict[str, Any], memo: str) -> str:
        """Apply a side effect (pay or e-mail); its receipt."""
        body = {k: op.get(k) for k in ("lane", "seq", "kind", "to", "amount")}
        return str(self.post("/effect", {**body, "memo": memo})["receipt"])

    def lookup(self, op: dict[str, Any]) -> int:
        """How many times the effect at ``op`` happened (what its provider's API would tell)."""
        return int(self.post("/lookup", {"key": f"{op['lane']}/{op['seq']}"})["count"])

    def ask(self, op: dict[str, Any]) -> int:
        """Ask the person (a new question); its id."""
        return int(self.post("/ask", {"lane": op["lane"], "seq": op["seq"]})["qid"])

    def wait_decision(self, qid: int) -> bool:
        while True:
            out = self.post("/asked", {"qid": qid})
            if out["decided"]:
                return bool(out["approved"])
            time.sleep(0.05)

    def answer(self, text: str) -> None:
        self.post("/answer", {"answer": text})

    def fenced(self, name: str, body: Any) -> Any:
        """Run a side effect; under letitloop inside ``atomic_marker`` (never silently twice)."""
        if not self.durable:
            return body()
        from letitloop import atomic_marker

        with atomic_marker(name) as first:
            if first:
                return body()
        return "done before"

    def act(self, where: str, memo: str) -> str:
        """The agents' ``act`` tool: the side effect the plan names at ``where``, fenced."""
        op = self.ops[where]
        return str(self.fenced(f"{op['kind']}-{op['to']}", lambda: self.effect(op, memo)))

    def ask_person(self, where: str) -> str:
        """The agents' ``ask_person`` tool: ask, wait for the decision, say it in a word."""
        return "approved" if self.wait_decision(self.ask(self.ops[where])) else "rejected"

    def analyze(self, item: int, prev: str) -> str:
        """The agents' ``analyze`` tool: one item of a fan-out (asks the model)."""
        return str(self.model(f"item-{item}", 0, item_prompt(int(item), prev))["text"])

    def stopped(self, exc: BaseException) -> None:
        """The framework stopped the run for a person: its error, message and fix."""
        body = {
            "error": type(exc).__name__,
            "message": getattr(exc, "message", str(exc)),
            "fix": getattr(exc, "fix", "") or "",
        }
        self.post("/stopped", body)


def balloon() -> None:
    """Allocate (and touch) memory until the kernel's OOM killer ends this process."""
    hold = []
    for _ in range(4096):  # 256 GB: the cgroup's limit comes long before
        hold.append(bytearray(b"x" * (64 << 20)))
    raise MemoryError("the balloon was not stopped by a memory limit")


def agent_actions(plan: list[dict[str, Any]], lane: str, parallel: bool) -> list[dict[str, Any]]:
    """What the model of agent ``lane`` decides after each of its turns, from the plan.

    ``{"tool": "note"}`` (a pure tool, to keep the agent going), ``{"tool": "effect", "op"}``,
    ``{"tool": "ask", "op"}``, ``{"tool": "items", "items": [...]}`` (a fan-out: all at once
    when the framework runs parallel tool calls, else one a turn) or ``{"final": True}``."""
    ops = [op for op in plan if op["lane"] == lane]
    actions: list[dict[str, Any]] = []
    for i, op in enumerate(ops):
        if op["op"] != "call":
            continue
        nxt = ops[i + 1] if i + 1 < len(ops) else None
        if nxt is None:
            actions.append({"final": True})
        elif nxt["op"] == "effect":
            actions.append({"tool": "effect", "op": nxt})
        elif nxt["op"] == "ask":
            actions.append({"tool": "ask", "op": nxt})
        elif nxt["op"] == "fanout":
            items = list(range(int(nxt["items"])))
            if parallel:
                actions.append({"tool": "items", "items": items, "op": nxt})
            else:
                actions += [{"tool": "items", "items": [i], "op": nxt} for i in items]
        else:
            actions.append({"tool": "note"})
    return actions


def tool_calls(action: dict[str, Any], token: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls (name, arguments) an agent's model makes for one of ``agent_actions``
    (not the final one), given the token of the model's reply."""
    tool, op = action["tool"], action.get("op") or {}
    where = f"{op.get('lane')}/{op.get('seq')}"
    if tool == "note":
        return [("note", {"text": f"tok-{token}"})]
    if tool == "effect":
        return [("act", {"where": where, "memo": token})]
    if tool == "ask":
        return [("ask_person", {"where": where})]
    return [("analyze", {"item": i, "prev": token}) for i in action["items"]]


def lanes(plan: list[dict[str, Any]]) -> list[str]:
    """The plan's agents (lanes), in order."""
    out: list[str] = []
    for op in plan:
        if op["lane"] not in out:
            out.append(op["lane"])
    return out


def report_errors(bench: Bench, exc: BaseException) -> None:
    """A run that stopped needing a person says so to the server; other errors crash loudly."""
    if getattr(exc, "fix", None):
        bench.stopped(exc)
        return
    raise exc
