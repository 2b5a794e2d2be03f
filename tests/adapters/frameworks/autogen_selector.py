"""A SelectorGroupChat (its selector is a model call too) whose tool asks ``approval()``: the run
suspends, is approved in this same process, and the same team object is called again.

    python autogen_selector.py OUT

Prints JSON: the messages, the side effects, how far each offline model's counter went, and
the errors ``durable_team`` gives for things that are not a team.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import SelectorGroupChat
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from letitloop import approval, open_journal
from letitloop.adapters.autogen import durable_team
from letitloop.errors import ApprovalPending, ConfigError

OUT = Path(sys.argv[1])
INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "gpt-4o",
    "structured_output": False,
}
sent: list[str] = []


def send(to: str) -> str:
    """Send only once a person approved."""
    if approval("send", {"to": to}, wait=False).approved:
        sent.append(to)
    return "ok"


def model(answers: list[object]) -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(answers, model_info=INFO)  # type: ignore[arg-type]


call = FunctionCall(id="1", name="send", arguments='{"to": "ed"}')
usage = RequestUsage(prompt_tokens=1, completion_tokens=1)
writer_model = model(
    [CreateResult(finish_reason="function_calls", content=[call], cached=False, usage=usage)]
    + ["draft"]
)
selector_model = model(["writer", "critic", "writer", "critic"])
writer = AssistantAgent("writer", tools=[send], model_client=writer_model)
critic = AssistantAgent("critic", model_client=model(["more", "APPROVE"]))
team = SelectorGroupChat(
    [writer, critic],
    model_client=selector_model,
    termination_condition=TextMentionTermination("APPROVE") | MaxMessageTermination(12),
)
durable = durable_team(team, run_id="sel", journal=str(OUT / "journal"))


async def main() -> None:
    report: dict[str, object] = {}
    try:
        await durable.run(task="go")
    except ApprovalPending as exc:
        report["pending"] = exc.run_id
    journal = open_journal(str(OUT / "journal"))
    (asked,) = journal.approvals(status="pending")
    report["sent_before"] = list(sent)
    journal.decide_approval(asked.id, approved=True, by="test")
    result = await durable.run(task="go")  # the same objects: rewound, then replayed
    report["messages"] = [[m.source, m.to_text()] for m in result.messages]
    report["sent"] = sent
    report["stop"] = result.stop_reason
    report["counters"] = [selector_model._current_index, writer_model._current_index]
    errors = []
    for bad in ({"team": None}, {"run_id": ""}):
        try:
            durable_team(bad.get("team", team), run_id=bad.get("run_id", "x"))  # type: ignore[arg-type]
        except ConfigError as exc:
            errors.append(str(exc))
    report["errors"] = errors
    print(json.dumps(report))


asyncio.run(main())
