"""A team run inside a ``@durable_async`` workflow of a script, so ``lil runs resume`` can
continue it: the team's run is a child run of the workflow's.

    AG_OUT=DIR AG_KILL=N python autogen_flow.py      # SIGKILLed in its N-th model call
    lil runs resume flow                              # imports this file, resumes the workflow
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.models import CreateResult
from autogen_ext.models.replay import ReplayChatCompletionClient

from letitloop import durable_async
from letitloop.adapters.autogen import durable_team

OUT = Path(os.environ["AG_OUT"])
KILL = int(os.environ.get("AG_KILL", "0"))
INFO = {
    "vision": False,
    "function_calling": False,
    "json_output": False,
    "family": "gpt-4o",
    "structured_output": False,
}


class Counted(ReplayChatCompletionClient):
    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        with (OUT / "calls").open("a") as f:
            f.write("call\n")
            f.flush()
            os.fsync(f.fileno())
        if len((OUT / "calls").read_text().splitlines()) == KILL:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().create(*args, **kwargs)


@durable_async(name="essay-flow", run_id="flow", journal=str(OUT / "journal"))
async def flow(task: str) -> list[str]:
    """Build the team (as a restarted process would) and run it as one step of this workflow."""
    writer = AssistantAgent("writer", model_client=Counted(["draft 1", "draft 2"], model_info=INFO))  # type: ignore[arg-type]
    critic = AssistantAgent("critic", model_client=Counted(["more", "APPROVE"], model_info=INFO))  # type: ignore[arg-type]
    team = RoundRobinGroupChat(
        [writer, critic], termination_condition=TextMentionTermination("APPROVE")
    )
    result = await durable_team(team, run_id="essay").run(task=task)
    return [f"{m.source}:{m.to_text()}" for m in result.messages]


if __name__ == "__main__":
    print(asyncio.run(flow("write an essay")))
