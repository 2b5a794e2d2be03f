"""A two-agent CrewAI crew, or a flow, on a scripted offline model, SIGKILLed on request.

    python crew_pipeline.py crew|flow OUT [KILL_AT] [--kill-in-tool] [--approval] [--tokens N]

The model answers by position in its conversation (which task, how many answers it gave
already), never by a counter of its own, so a resumed process gets the right next answer. Every
model call is counted in ``OUT/calls`` (fsync'd); with KILL_AT the process SIGKILLs itself
during the KILL_AT-th call ever made, before answering. ``--kill-in-tool`` kills it inside the
side effect's ``atomic_marker`` block, after the effect; with ``--approval`` the side effect
first asks ``approval()`` without waiting, and ``--tokens N`` gives the run a token budget (a
suspended run prints ``{"suspended": ...}``).
Side effects go to ``OUT/sent``, runs of the pure tool to ``OUT/lookups``; the result is
printed as JSON on the last line.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from crewai import Agent, Crew, Task
from crewai.flow.flow import Flow, listen, start
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from pydantic import BaseModel

from letitloop import Budget, Suspended, approval, atomic_marker
from letitloop.adapters.crewai import durable_crew
from letitloop.kernel._cost import set_prices

MODE, OUT = sys.argv[1], Path(sys.argv[2])
KILL_AT = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 0
KILL_IN_TOOL = "--kill-in-tool" in sys.argv
ASK_FIRST = "--approval" in sys.argv  # send_note asks a person first (and does not wait)
TOKENS = int(sys.argv[sys.argv.index("--tokens") + 1]) if "--tokens" in sys.argv else None
BOARD = "--board" in sys.argv  # durable_crew(board=True): the tasks' outputs on the blackboard

SCRIPT = {  # ReAct text: CrewAI's format for a model without function calling
    "research": [
        'Thought: look it up\nAction: lookup\nAction Input: {"topic": "otters"}',
        'Thought: tell the editor\nAction: send_note\nAction Input: {"text": "otters"}',
        "Thought: I now know the final answer\nFinal Answer: otters hold hands while asleep",
    ],
    "write": ["Thought: I now know the final answer\nFinal Answer: POEM({context})"],
    "fetch": ["sea otters hold hands"],
    "summarize": ["SUMMARY({context})"],
}


def _append(name: str, line: str) -> int:
    """Append a line durably; return how many lines the file holds now."""
    path = OUT / name
    with path.open("a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    return len(path.read_text().splitlines())


class Scripted(BaseLLM):
    """An offline model: the answer at this conversation's position in SCRIPT."""

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
        text = "\n".join(str(m.get("content")) for m in messages)
        key = next(k for k in SCRIPT if f"[{k}]" in text)
        done = sum(1 for m in messages if m.get("role") == "assistant")
        if _append("calls", f"{key}:{done}") == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        self._track_token_usage_internal(
            {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        )
        context = ""
        for marker in ("CONTEXT:", "context you're working with:"):
            if marker in text:
                context = text.split(marker, 1)[1].strip().splitlines()[0]
        return SCRIPT[key][done].replace("{context}", context)


@tool("lookup")
def lookup(topic: str) -> str:
    """Look a topic up (no side effect)."""
    _append("lookups", topic)
    return f"facts about {topic}: they hold hands"


@tool("send_note")
def send_note(text: str) -> str:
    """Send a note to the editor: a side effect that must happen once."""
    if ASK_FIRST and not approval("send_note", {"text": text}, wait=False).approved:
        return "the editor said no"
    with atomic_marker("send_note") as first:
        if first:
            _append("sent", text)
            if KILL_IN_TOOL:
                os.kill(os.getpid(), signal.SIGKILL)
    return "note sent"


def make_crew(llm: BaseLLM) -> Crew:
    researcher = Agent(
        role="researcher", goal="find facts", backstory="a careful researcher", llm=llm,
        tools=[lookup, send_note], max_iter=5,
    )  # fmt: skip
    writer = Agent(role="writer", goal="write poems", backstory="a poet", llm=llm, max_iter=3)
    research = Task(
        name="research", description="[research] Find facts about otters.",
        expected_output="facts", agent=researcher,
    )  # fmt: skip
    write = Task(
        name="write", description="[write] Write a poem for {reader}.",
        expected_output="a poem", agent=writer,
    )  # fmt: skip
    return Crew(agents=[researcher, writer], tasks=[research, write])


class Notes(BaseModel):
    facts: str = ""
    summary: str = ""
    notes: int = 0


class OtterFlow(Flow[Notes]):
    model: Any = None

    @start()
    def fetch(self) -> str:
        self.state.facts = self.model.call("[fetch] what do otters do?")
        with atomic_marker("notify") as first:
            if first:
                _append("sent", self.state.facts)
        self.state.notes += 1
        return self.state.facts

    @listen(fetch)
    def summarize(self, facts: str) -> str:
        self.state.summary = self.model.call(f"[summarize] CONTEXT: {facts}")
        return self.state.summary

    @listen(summarize)
    def publish(self, summary: str) -> str:
        return f"{summary} after {self.state.notes} note(s)"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    set_prices({"scripted-1": (1.0, 2.0)})  # USD per 1M tokens: 140 micro-USD per call
    llm = Scripted(model="scripted-1")
    if MODE == "crew":
        budget = Budget(tokens=TOKENS) if TOKENS is not None else None
        crew = durable_crew(make_crew(llm), run_id="otters", budget=budget, board=BOARD)
        try:
            out = crew.kickoff(inputs={"reader": "Ada"})
        except Suspended as exc:
            print(json.dumps({"suspended": type(exc).__name__}))
            return
        result: dict[str, Any] = {
            "raw": out.raw,
            "tasks": [t.raw for t in out.tasks_output],
            "task_outputs": [t.output.raw if t.output else None for t in crew.crew.tasks],
            "tokens": out.token_usage.prompt_tokens,
        }
        if BOARD:
            from letitloop.memory import blackboard

            entries = blackboard("crewai:crew:otters").find(tag="crewai")
            result["board"] = [[e.key, e.version, e.value] for e in entries]
    else:
        flow = OtterFlow()
        flow.model = llm
        durable = durable_crew(flow, run_id="otters")
        final = durable.kickoff()
        result = {"raw": final, "state": flow.state.model_dump(exclude={"id"})}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
