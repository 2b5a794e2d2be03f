"""CrewAI's worker: each lane of the plan is an agent with one task, all in one ``Crew``.

The model is a ``BaseLLM`` whose ``call`` asks the counter server (lane = the agent, sequence =
twice the assistant messages so far) and writes the plan's next action in CrewAI's ReAct text
(``Action:`` / ``Action Input:``, or ``Final Answer:``). CrewAI takes one action a turn, so the
fan-out's items are analyzed one after the other. A handoff is the crew's task sequence (each
task is given the previous one's output). Bare CrewAI resumes nothing of its own: the harness
kicks the crew off again. With ``crewai-lil`` the crew is a ``durable_crew`` (letitloop's
adapter), the side effect is fenced by ``atomic_marker``, and a kickoff again skips finished
tasks and replays finished model and tool calls.
"""

from __future__ import annotations

import json
import os
from typing import Any

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool

from letitloop.bench.workers import _common as c

spec = c.load_spec()
bench = c.Bench(spec)


@tool("note")
def note(text: str) -> str:
    """Write a note to yourself (no side effect)."""
    return f"noted {text}"


@tool("act")
def act(where: str, memo: str) -> str:
    """Pay or e-mail someone, as the plan at `where` says (a side effect)."""
    return bench.act(where, memo)


@tool("ask_person")
def ask_person(where: str) -> str:
    """Ask a person to approve, and wait for the answer."""
    return bench.ask_person(where)


@tool("analyze")
def analyze(item: int, prev: str) -> str:
    """Analyze one item (asks the model)."""
    return bench.analyze(item, prev)


class ServerLLM(BaseLLM):
    """The offline model of one agent (lane): the server's reply, the plan's next action."""

    lane: str = "main"

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        prompt = "\n".join(str(m.get("content")) for m in messages)
        out = bench.model(self.lane, 2 * turn, prompt)
        text, token = str(out["text"]), str(out["token"])
        actions = c.agent_actions(bench.plan, self.lane, parallel=False)
        action = actions[min(turn, len(actions) - 1)]
        if action.get("final"):
            return f"Thought: I now know the final answer\nFinal Answer: {text}"
        if action["tool"] == "note":
            name, args = "note", {"text": f"tok-{token}"}
        elif action["tool"] == "effect":
            op = action["op"]
            name, args = "act", {"where": f"{op['lane']}/{op['seq']}", "memo": token}
        elif action["tool"] == "ask":
            op = action["op"]
            name, args = "ask_person", {"where": f"{op['lane']}/{op['seq']}"}
        else:
            name, args = "analyze", {"item": action["items"][0], "prev": token}
        return f"Thought: {text}\nAction: {name}\nAction Input: {json.dumps(args)}"


def crew() -> Crew:
    agents, tasks = [], []
    for lane in c.lanes(bench.plan):
        llm = ServerLLM(model="lil-bench-1")
        llm.lane = lane
        agent = Agent(
            role=lane,
            goal="follow the plan",
            backstory=f"the {lane} agent",
            llm=llm,
            tools=[note, act, ask_person, analyze],
            max_iter=60,
            verbose=False,
        )
        agents.append(agent)
        tasks.append(
            Task(
                name=lane,
                description=f"[{lane}] do your part of the task.",
                expected_output="the answer",
                agent=agent,
            )
        )
    return Crew(agents=agents, tasks=tasks, verbose=False)


def main() -> None:
    if bench.durable:
        from letitloop import LetItLoopError
        from letitloop.adapters.crewai import durable_crew

        durable = durable_crew(crew(), run_id=bench.run, journal=spec["store"]["journal"])
        try:
            out = durable.kickoff(inputs={})
        except LetItLoopError as exc:
            c.report_errors(bench, exc)
            os._exit(3)
    else:
        out = crew().kickoff(inputs={})
    bench.answer(str(out.raw))
    os._exit(0)


if __name__ == "__main__":
    main()
