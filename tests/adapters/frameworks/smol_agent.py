"""A smolagents agent on a scripted offline model, made durable; run by tests/adapters in
``.venvs/smolagents``: ``python smol_agent.py OUT KIND`` with KIND ``code`` (a CodeAgent),
``tool`` (a ToolCallingAgent, one answer with two tool calls at once) or ``multi`` (a CodeAgent
manager with a ToolCallingAgent it manages).

The scripted models answer by their position in the conversation (the assistant messages so
far), as a real model answers what it is shown, never by a counter of their own. Every model
call appends a line to OUT/calls, every tool call a line to OUT/tools, every e-mail sent a line
to OUT/effects (each fsync'd before going on). ``SMOL_HANG_AT=k`` makes the k-th model call
(counted in OUT/calls) hang, ``SMOL_HANG_IN=send`` makes the e-mail tool hang right after its
effect: the test SIGKILLs the process there. The answer (or the error) goes to OUT/result.json.
With ``SMOL_PARENT=1`` the agent runs inside ``nightly``, a ``@durable`` workflow of this
script, which ``lil runs resume`` can import and call again (OUT and KIND then come from
``SMOL_OUT`` and ``SMOL_KIND``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

from smolagents import CodeAgent, Tool, ToolCallingAgent
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import TokenUsage

from letitloop import atomic_marker, durable
from letitloop.adapters.smolagents import durable_agent
from letitloop.kernel._cost import set_prices

OUT = Path(os.environ.get("SMOL_OUT") or sys.argv[1])
KIND = os.environ.get("SMOL_KIND") or sys.argv[2]
TASK = "Find facts about cities and tell ops."
HANG_AT = int(os.environ.get("SMOL_HANG_AT", "0"))
HANG_IN = os.environ.get("SMOL_HANG_IN", "")
RECONCILE = os.environ.get("SMOL_RECONCILE", "")
FACTS = {
    "Paris": "Paris has 20 arrondissements",
    "Rome": "Rome has 7 hills",
    "Oslo": "Oslo has a fjord",
}


def log(name: str, line: str) -> int:
    """Append a line durably; return how many lines the file holds now."""
    with (OUT / name).open("a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    return len((OUT / name).read_text().splitlines())


def hang() -> None:
    time.sleep(600)  # the test kills the process here


class LookupTool(Tool):
    name = "lookup"
    description = "Look up a fact about a city."
    inputs: ClassVar[dict[str, Any]] = {"city": {"type": "string", "description": "the city"}}
    output_type = "string"

    def forward(self, city: str) -> str:
        log("tools", f"lookup {city}")
        return FACTS[city]


class SendEmailTool(Tool):
    name = "send_email"
    description = "Send an e-mail (a side effect: it must happen once)."
    inputs: ClassVar[dict[str, Any]] = {
        "to": {"type": "string", "description": "the recipient"},
        "body": {"type": "string", "description": "the text"},
    }
    output_type = "string"

    def forward(self, to: str, body: str) -> str:
        log("tools", f"send_email {to}")
        reconcile = (lambda marker: RECONCILE) if RECONCILE else None
        with atomic_marker("send_email", reconcile=reconcile) as first:
            if first:
                log("effects", f"{to}: {json.dumps(body)}")
                if HANG_IN == "send":
                    hang()
        return f"sent to {to}"


def observations(messages: list[Any]) -> list[str]:
    """The tool results the agent has shown the model so far."""
    found = []
    for m in messages:
        if m.role == MessageRole.TOOL_RESPONSE:
            for part in m.content:
                found.append(part["text"].removeprefix("Observation:\n").strip())
    return found


class Scripted(Model):
    """Answers ``script[i]`` where i counts the assistant messages in the conversation."""

    def __init__(self, agent: str, script: list[Any]) -> None:
        super().__init__(model_id="scripted-1")
        self.agent = agent
        self.script = script

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        i = sum(1 for m in messages if m.role == MessageRole.ASSISTANT)
        if log("calls", f"{self.agent} {i}") == HANG_AT:
            hang()
        answer = self.script[i]
        if callable(answer):
            answer = answer(messages)
        if isinstance(answer, str):
            return ChatMessage(
                role=MessageRole.ASSISTANT, content=answer, token_usage=TokenUsage(100 + i, 10)
            )
        text, calls = answer
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=text,
            tool_calls=[
                ChatMessageToolCall(
                    id=f"call_{i}_{n}",
                    type="function",
                    function=ChatMessageToolCallFunction(name=name, arguments=args),
                )
                for n, (name, args) in enumerate(calls)
            ],
            token_usage=TokenUsage(100 + i, 10),
        )


CODE_SCRIPT = [
    'Thought: find a fact.\n<code>\nfact = lookup(city="Paris")\nprint(fact)\n</code>',
    'Thought: tell ops.\n<code>\nreceipt = send_email(to="ops@example.com", body=fact)\n'
    "print(receipt)\n</code>",
    'Thought: one more.\n<code>\nother = lookup(city="Rome")\nprint(other)\n</code>',
    'Thought: done.\n<code>\nfinal_answer(fact + " / " + other + " / " + receipt)\n</code>',
]
TOOL_SCRIPT = [
    ("Thought: find a fact.", [("lookup", {"city": "Paris"})]),
    ("Thought: tell ops.", [("send_email", {"to": "ops@example.com", "body": "Paris"})]),
    ("Thought: two more.", [("lookup", {"city": "Rome"}), ("lookup", {"city": "Oslo"})]),
    lambda messages: (
        "Thought: done.",
        [("final_answer", {"answer": " / ".join(observations(messages))})],
    ),
]
RESEARCHER_SCRIPT = [
    ("Thought: look it up.", [("lookup", {"city": "Paris"})]),
    lambda messages: (
        "Thought: report.",
        [("final_answer", {"answer": " / ".join(observations(messages))})],
    ),
]
MANAGER_SCRIPT = [
    'Thought: ask.\n<code>\nreport = researcher(task="find a fact about Paris")\n'
    "print(report)\n</code>",
    'Thought: tell ops.\n<code>\nreceipt = send_email(to="ops@example.com", body=report[-30:])\n'
    "print(receipt)\n</code>",
    'Thought: done.\n<code>\nfinal_answer(receipt + " | " + report)\n</code>',
]


def build(kind: str) -> Any:
    if kind == "code":
        return CodeAgent(
            tools=[LookupTool(), SendEmailTool()],
            model=Scripted("coder", CODE_SCRIPT),
            verbosity_level=0,
        )
    if kind == "tool":
        return ToolCallingAgent(
            tools=[LookupTool(), SendEmailTool()],
            model=Scripted("caller", TOOL_SCRIPT),
            verbosity_level=0,
        )
    researcher = ToolCallingAgent(
        tools=[LookupTool()],
        model=Scripted("researcher", RESEARCHER_SCRIPT),
        name="researcher",
        description="Finds facts about cities.",
        verbosity_level=0,
    )
    return CodeAgent(
        tools=[SendEmailTool()],
        model=Scripted("manager", MANAGER_SCRIPT),
        managed_agents=[researcher],
        name="manager",
        verbosity_level=0,
    )


@durable(name="smol-nightly", run_id="nightly-{kind}")
def nightly(kind: str) -> str:
    """A workflow around the agent, whose run is the agent's parent run."""
    return str(durable_agent(build(kind), run_id=f"smol-{kind}").run(TASK))


def main() -> None:
    set_prices({"scripted-1": (1.0, 2.0)})  # USD per 1M tokens: the steps' cost from usage
    try:
        if os.environ.get("SMOL_PARENT"):
            result = {"answer": nightly(KIND)}
        else:
            result = {"answer": durable_agent(build(KIND), run_id=f"smol-{KIND}").run(TASK)}
    except Exception as exc:
        result = {"error": type(exc).__name__, "message": str(exc)}
    (OUT / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
