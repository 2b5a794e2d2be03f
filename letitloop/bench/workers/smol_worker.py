"""smolagents' worker: each lane of the plan is a ``ToolCallingAgent`` on the offline model.

The model is a ``Model`` whose ``generate`` asks the counter server (lane = the agent, sequence
= twice the assistant messages so far) and turns the plan's next action into a tool call: a
pure ``note``, a side effect, a question to the person, the fan-out's ``analyze`` calls (all in
one turn: smolagents runs them in parallel) or ``final_answer``. A handoff runs the agents one
after the other, each given the previous one's answer. Bare smolagents has nothing to resume
with: the harness runs the agents again from the start. With ``smolagents-lil`` each agent is a
``durable_agent`` under one ``@durable`` run (letitloop's adapter), the side effect is fenced by
``atomic_marker``, and running again replays every finished model and tool call.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from smolagents import Tool, ToolCallingAgent
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)
from smolagents.monitoring import TokenUsage

from letitloop.bench.workers import _common as c

spec = c.load_spec()
bench = c.Bench(spec)


class Note(Tool):
    name = "note"
    description = "Write a note to yourself (no side effect)."
    inputs: ClassVar[dict[str, Any]] = {"text": {"type": "string", "description": "the note"}}
    output_type = "string"

    def forward(self, text: str) -> str:
        return f"noted {text}"


class Act(Tool):
    name = "act"
    description = "Pay or e-mail someone, as the plan at `where` says (a side effect)."
    inputs: ClassVar[dict[str, Any]] = {
        "where": {"type": "string", "description": "the plan's step"},
        "memo": {"type": "string", "description": "the memo"},
    }
    output_type = "string"

    def forward(self, where: str, memo: str) -> str:
        return bench.act(where, memo)


class Ask(Tool):
    name = "ask_person"
    description = "Ask a person to approve, and wait for the answer."
    inputs: ClassVar[dict[str, Any]] = {"where": {"type": "string", "description": "the step"}}
    output_type = "string"

    def forward(self, where: str) -> str:
        return bench.ask_person(where)


class Analyze(Tool):
    name = "analyze"
    description = "Analyze one item (asks the model)."
    inputs: ClassVar[dict[str, Any]] = {
        "item": {"type": "integer", "description": "the item"},
        "prev": {"type": "string", "description": "the token to analyze for"},
    }
    output_type = "string"

    def forward(self, item: int, prev: str) -> str:
        return bench.analyze(item, prev)


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


class ServerModel(Model):
    """The offline model of lane ``lane``: the server's reply, the plan's next action."""

    def __init__(self, lane: str) -> None:
        super().__init__(model_id="lil-bench-1")
        self.lane = lane
        self.actions = c.agent_actions(bench.plan, lane, parallel=True)

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        turn = sum(1 for m in messages if m.role == MessageRole.ASSISTANT)
        prompt = "\n".join(text_of(m) for m in messages)
        out = bench.model(self.lane, 2 * turn, prompt)
        text, token = str(out["text"]), str(out["token"])
        action = self.actions[min(turn, len(self.actions) - 1)]
        if action.get("final"):
            calls = [("final_answer", {"answer": text})]
        else:
            calls = c.tool_calls(action, token)
        usage = out["usage"]
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=text,
            tool_calls=[
                ChatMessageToolCall(
                    id=f"call_{turn}_{n}",
                    type="function",
                    function=ChatMessageToolCallFunction(name=name, arguments=args),
                )
                for n, (name, args) in enumerate(calls)
            ],
            token_usage=TokenUsage(usage["input_tokens"], usage["output_tokens"]),
        )


def agent(lane: str) -> Any:
    tools: list[Tool] = [Note(), Act(), Ask(), Analyze()]
    built = ToolCallingAgent(
        tools=tools, model=ServerModel(lane), verbosity_level=0, max_steps=60, max_tool_threads=16
    )
    if not bench.durable:
        return built
    from letitloop.adapters.smolagents import durable_agent

    return durable_agent(built, run_id=f"{bench.run}-{lane}", journal=spec["store"]["journal"])


def pipeline() -> str:
    prev, answer = "", ""
    for lane in c.lanes(bench.plan):
        task = f"[{lane}] continue from tok-{prev}" if prev else f"[{lane}] begin the task"
        answer = str(agent(lane).run(task))
        prev = c.token_of(answer)
    return answer


def main() -> None:
    if bench.durable:
        from letitloop import LetItLoopError, durable

        run = durable(journal=spec["store"]["journal"], run_id=bench.run, name="bench.smol")(
            pipeline
        )
        try:
            answer = run()
        except LetItLoopError as exc:
            c.report_errors(bench, exc)
            os._exit(3)
    else:
        answer = pipeline()
    bench.answer(answer)
    os._exit(0)


if __name__ == "__main__":
    main()
