"""A two-agent AutoGen team on an offline model, SIGKILLed after KILL_AT model calls."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, FunctionExecutionResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from letitloop import atomic_marker
from letitloop.adapters.autogen import durable_team

OUT = Path(sys.argv[1])
KILL_AT = int(sys.argv[2])
INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


class Counted(ReplayChatCompletionClient):
    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        with (OUT / "calls").open("a") as f:
            f.write("call\n")
        n = len((OUT / "calls").read_text().splitlines())
        if n == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().create(*args, **kwargs)


def send_email(to: str) -> str:
    """Send the draft (a side effect that must happen once)."""
    with atomic_marker("send_email") as first:
        if first:
            with (OUT / "sent").open("a") as f:
                f.write(to + "\n")
    return f"sent to {to}"


def usage() -> RequestUsage:
    return RequestUsage(prompt_tokens=10, completion_tokens=5)


writer_client = Counted(
    [
        CreateResult(
            finish_reason="function_calls",
            usage=usage(),
            cached=False,
            content=[FunctionCall(id="c1", name="send_email", arguments='{"to": "ed"}')],
        ),
        "draft 2",
    ],
    model_info=INFO,  # type: ignore[arg-type]
)
critic_client = Counted(["critique 1", "APPROVE"], model_info=INFO)  # type: ignore[arg-type]
writer = AssistantAgent("writer", model_client=writer_client, tools=[send_email])
critic = AssistantAgent("critic", model_client=critic_client)
team = RoundRobinGroupChat([writer, critic], termination_condition=MaxMessageTermination(5))
durable = durable_team(team, run_id="essay", journal=str(OUT / "journal"))


async def main() -> None:
    result = await durable.run(task="write an essay")
    print("|".join(f"{m.source}:{m.to_text()}" for m in result.messages))


asyncio.run(main())
_ = FunctionExecutionResult
