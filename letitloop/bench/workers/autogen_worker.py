"""AutoGen's worker: each lane of the plan is an ``AssistantAgent``, in a ``RoundRobinGroupChat``.

The model client answers from the counter server (lane = the agent, sequence = twice its own
assistant messages so far) and turns the plan's next action into function calls (the fan-out's
items all in one turn: AutoGen runs them concurrently) or a final text. Each agent loops over
its tools (``max_tool_iterations``) until it answers in text; the team ends when the last agent
has spoken, so a handoff is the round robin's order. Bare AutoGen has ``save_state`` but nothing
that saves it as it goes: the harness runs the team again from the start. With ``autogen-lil``
the team is a ``durable_team`` (letitloop's adapter): every model and tool call is a step, the
side effect is fenced by ``atomic_marker``, and running again replays what finished.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import SourceMatchTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall
from autogen_core.models import AssistantMessage, CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from letitloop.bench.workers import _common as c

spec = c.load_spec()
bench = c.Bench(spec)
INFO: Any = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


def note(text: str) -> str:
    """Write a note to yourself (no side effect)."""
    return f"noted {text}"


def act(where: str, memo: str) -> str:
    """Pay or e-mail someone, as the plan at `where` says (a side effect)."""
    return bench.act(where, memo)


def ask_person(where: str) -> str:
    """Ask a person to approve, and wait for the answer."""
    return bench.ask_person(where)


def analyze(item: int, prev: str) -> str:
    """Analyze one item (asks the model)."""
    return bench.analyze(item, prev)


class ServerClient(ReplayChatCompletionClient):
    """The offline model of one agent (lane)."""

    def __init__(self, lane: str) -> None:
        super().__init__([], model_info=INFO)
        self.lane = lane
        self.actions = c.agent_actions(bench.plan, lane, parallel=True)

    async def create(self, messages: Sequence[Any], **kwargs: Any) -> CreateResult:
        turn = sum(1 for m in messages if isinstance(m, AssistantMessage))
        prompt = "\n".join(str(m.content) for m in messages)
        out = await asyncio.to_thread(bench.model, self.lane, 2 * turn, prompt)
        text, token = str(out["text"]), str(out["token"])
        usage = RequestUsage(
            prompt_tokens=out["usage"]["input_tokens"],
            completion_tokens=out["usage"]["output_tokens"],
        )
        action = self.actions[min(turn, len(self.actions) - 1)]
        if action.get("final"):
            return CreateResult(finish_reason="stop", content=text, usage=usage, cached=False)
        calls = c.tool_calls(action, token)
        content = [
            FunctionCall(id=f"c{turn}_{n}", name=name, arguments=json.dumps(args))
            for n, (name, args) in enumerate(calls)
        ]
        return CreateResult(
            finish_reason="function_calls", content=content, usage=usage, cached=False
        )


def team() -> Any:
    lanes = c.lanes(bench.plan)
    agents = [
        AssistantAgent(
            lane,
            model_client=ServerClient(lane),
            tools=[note, act, ask_person, analyze],
            max_tool_iterations=60,
            reflect_on_tool_use=False,
        )
        for lane in lanes
    ]
    return RoundRobinGroupChat(agents, termination_condition=SourceMatchTermination([lanes[-1]]))


async def run() -> str:
    task = f"[{c.lanes(bench.plan)[0]}] begin the task"
    if bench.durable:
        from letitloop.adapters.autogen import durable_team

        durable = durable_team(team(), run_id=bench.run, journal=spec["store"]["journal"])
        result = await durable.run(task=task)
    else:
        result = await team().run(task=task)
    return str(result.messages[-1].content)


def main() -> None:
    try:
        answer = asyncio.run(run())
    except Exception as exc:
        if bench.durable and getattr(exc, "fix", None):
            c.report_errors(bench, exc)
            os._exit(3)
        raise
    bench.answer(answer)
    os._exit(0)


if __name__ == "__main__":
    main()
