"""An AutoGen team made durable with letitloop, on AutoGen's own offline model.

    python team.py [--crash-at review|publish]

A writer publishes a haiku with a tool (a side effect: a line in published.txt, fenced by an
atomic_marker) and a critic reviews it until it says APPROVE. ``durable_team`` journals each
model call and each tool call as a step of the run ``autogen:RoundRobinGroupChat:haiku``, in
.letitloop/ beside this file.

--crash-at review SIGKILLs the process while the critic writes its second review (the haiku was
published by then); --crash-at publish SIGKILLs it inside the tool, right after the haiku was
written. Run it again without the flag: a fresh team replays the conversation from the journal,
only the call in flight runs again, and the haiku is never published twice.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from letitloop import LetItLoopError, atomic_marker
from letitloop.adapters.autogen import durable_team

HERE = Path(__file__).resolve().parent
PUBLISHED = HERE / "published.txt"
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
TASK = "Write and publish a haiku about otters."
INFO: Any = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "gpt-4o",
    "structured_output": False,
}
asked: list[str] = []


def crash_here(point: str) -> None:
    """SIGKILL this process if it was started with --crash-at POINT."""
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


class Model(ReplayChatCompletionClient):
    """AutoGen's offline model, answering from its list; it counts the calls that really run."""

    def __init__(self, name: str, answers: list[Any]) -> None:
        super().__init__(answers, model_info=INFO)
        self.name = name

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        if self.name == "critic" and asked.count("critic") == 1:
            crash_here("review")
        asked.append(self.name)
        print(f"  model: {self.name}")
        return await super().create(*args, **kwargs)


def publish(title: str) -> str:
    """Publish the haiku: a side effect that must happen once."""
    with atomic_marker("publish") as should_execute:
        if should_execute:
            with PUBLISHED.open("a", encoding="utf-8") as f:
                f.write(title + "\n")
            print(f"  tool: publish({title!r})")
            crash_here("publish")
    return f"published {title!r}"


def build_team() -> Any:
    """A fresh team, built the same way every time (a resumed run replays into it)."""
    call = FunctionCall(id="1", name="publish", arguments='{"title": "Otters, hand in hand"}')
    usage = RequestUsage(prompt_tokens=12, completion_tokens=8)
    writer = AssistantAgent(
        "writer",
        tools=[publish],
        model_client=Model(
            "writer",
            [
                CreateResult(
                    finish_reason="function_calls", content=[call], cached=False, usage=usage
                ),
                "Here is the final haiku.",
            ],
        ),
    )
    critic = AssistantAgent(
        "critic", model_client=Model("critic", ["Tighten line two.", "APPROVE"])
    )
    team = RoundRobinGroupChat(
        [writer, critic], termination_condition=TextMentionTermination("APPROVE")
    )
    return durable_team(team, run_id="haiku")


async def main() -> int:
    try:
        result = await build_team().run(task=TASK)
    except LetItLoopError as err:  # a side effect in doubt: the message says what to do
        print(f"error: {err}", file=sys.stderr)
        return 1
    print("conversation: " + " > ".join(m.source for m in result.messages))
    print(f"last word: {result.messages[-1].to_text()}")
    print(f"model calls this process: {len(asked)}")
    sent = PUBLISHED.read_text().splitlines() if PUBLISHED.exists() else []
    print(f"haiku in published.txt: {len(sent)}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
