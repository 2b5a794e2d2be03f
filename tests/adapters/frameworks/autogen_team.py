"""AutoGen teams on AutoGen's own offline model, journaled by letitloop, killed where told.

    python autogen_team.py OUT SHAPE KILL

SHAPE: ``team`` (RoundRobinGroupChat of a writer with a tool and a critic), ``stream`` (the same
through ``run_stream``), ``human`` (the critic is a UserProxyAgent: a person's answers, noted in
OUT/asked) or ``agent`` (one AssistantAgent that reflects on its tool's result).
KILL: ``N`` SIGKILLs this process inside the N-th model call of this process (``0``: never),
``in-tool`` inside the tool's ``atomic_marker`` block after its side effect, ``after-tool``
right after that block; ``approve`` kills nothing, but the tool asks ``approval()`` first;
``budget`` kills nothing, but the run may spend 30 tokens.
Every model call that reaches the model is a line in OUT/calls and every side effect a line in
OUT/sent, both fsync'd; the result is printed as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from letitloop import Budget, approval, atomic_marker
from letitloop.adapters.autogen import AutoGenStateSerializer, durable_team

OUT = Path(sys.argv[1])
SHAPE = sys.argv[2]
KILL = sys.argv[3]
INFO = {
    "vision": False,
    "function_calling": True,  # the default model_info says False: AssistantAgent refuses tools
    "json_output": False,
    "family": "gpt-4o",  # priced, so the run shows a cost
    "structured_output": False,
}
calls_here = 0
BOARD = os.environ.get("AUTOGEN_BOARD") == "1"  # durable_team(board=True), the tool on the board


def note(name: str, line: str) -> None:
    with (OUT / name).open("a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


class Counted(ReplayChatCompletionClient):
    """The replay client, counting the calls that reach it (and dying on the chosen one)."""

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        global calls_here
        calls_here += 1
        note("calls", f"{self._agent_name}:{self._current_index}")
        if str(calls_here) == KILL:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().create(*args, **kwargs)

    _agent_name = "?"


def client(name: str, answers: list[Any]) -> Counted:
    c = Counted(answers, model_info=INFO)  # type: ignore[arg-type]
    c._agent_name = name
    return c


def send_email(to: str) -> str:
    """Send the draft (a side effect that must happen once): a sync tool, run on a thread."""
    if KILL == "approve" and not approval("send_email", {"to": to}, wait=False).approved:
        return "not sent"
    if BOARD:
        from letitloop.memory import blackboard

        blackboard().put("mail", {"to": to}, tags=["sent"])  # the team's board (a child run)
    with atomic_marker("send_email") as first:
        if first:
            note("sent", to)
            if KILL == "in-tool":
                os.kill(os.getpid(), signal.SIGKILL)
    if KILL == "after-tool":
        os.kill(os.getpid(), signal.SIGKILL)
    return f"sent to {to}"


def tool_call() -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        cached=False,
        content=[FunctionCall(id="c1", name="send_email", arguments='{"to": "ed"}')],
    )


def build() -> Any:
    if SHAPE == "agent":
        agent = AssistantAgent(
            "mailer",
            model_client=client("mailer", [tool_call(), "mailed ed"]),
            tools=[send_email],
            reflect_on_tool_use=True,
        )
        return AutoGenStateSerializer(session_id="mail", journal=str(OUT / "journal")).wrap_agent(
            agent
        )
    writer = AssistantAgent(
        "writer", model_client=client("writer", [tool_call(), "draft 2"]), tools=[send_email]
    )
    critic: Any = AssistantAgent("critic", model_client=client("critic", ["critique 1", "APPROVE"]))
    if SHAPE == "human":

        def ask(prompt: str) -> str:
            """The person answers each new question once (their answers outlive the process)."""
            asked = OUT / "asked"
            done = len(asked.read_text().splitlines()) if asked.exists() else 0
            answer = ["critique 1", "APPROVE"][done]
            note("asked", answer)
            return answer

        critic = UserProxyAgent("critic", input_func=ask)
    team = RoundRobinGroupChat(
        [writer, critic],
        termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(12),
    )
    budget = Budget(tokens=30) if KILL == "budget" else None
    return durable_team(
        team, run_id="essay", journal=str(OUT / "journal"), budget=budget, board=BOARD
    )


async def main() -> None:
    durable = build()
    if SHAPE == "stream":
        streamed = []
        async for item in durable.run_stream(task="write an essay"):
            if isinstance(item, TaskResult):
                result = item
            else:
                streamed.append(item.source)
        assert streamed == [m.source for m in result.messages], streamed
    else:
        result = await durable.run(task="write an essay")
    print(
        json.dumps(
            {
                "messages": [[m.type, m.source, m.to_text()] for m in result.messages],
                "stop_reason": result.stop_reason,
            }
        )
    )


asyncio.run(main())
