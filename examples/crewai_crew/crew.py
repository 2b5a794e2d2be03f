"""A CrewAI crew made durable with letitloop, on a scripted offline model.

    python crew.py [--crash-at write|note]

A researcher finds facts about otters and sends the editor a note (a side effect: a line in
notes.txt, fenced by an atomic_marker); a writer turns the facts into a poem. ``durable_crew``
journals each task, each answer of an agent's model and each tool call as a step of the run
``crewai:crew:poem``, in .letitloop/ beside this file.

--crash-at write SIGKILLs the process while the writer's model writes (the research task had
finished); --crash-at note SIGKILLs it inside the note tool, right after the note was written.
Run it again without the flag: the finished task is skipped and its output restored, the
journaled model and tool calls replay, and the note is never sent twice.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

for _name in ("CREWAI_DISABLE_TELEMETRY", "CREWAI_DISABLE_VERSION_CHECK", "OTEL_SDK_DISABLED"):
    os.environ.setdefault(_name, "true")  # offline: no telemetry, no version check
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import tool  # noqa: E402

from letitloop import LetItLoopError, atomic_marker  # noqa: E402
from letitloop.adapters.crewai import durable_crew  # noqa: E402

HERE = Path(__file__).resolve().parent
NOTES = HERE / "notes.txt"
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
calls: list[str] = []


def crash_here(point: str) -> None:
    """SIGKILL this process if it was started with --crash-at POINT."""
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


@tool("send_note")
def send_note(text: str) -> str:
    """Send a note to the editor: a side effect, fenced so a resumed run never repeats it."""
    with atomic_marker("send_note") as should_execute:
        if should_execute:
            with NOTES.open("a", encoding="utf-8") as f:
                f.write(text + "\n")
            print(f"  tool: send_note({text!r}) sent")
            crash_here("note")
    return "note sent"


ANSWERS = {  # CrewAI's ReAct text format (this model has no function calling)
    "research": [
        'Thought: tell the editor\nAction: send_note\nAction Input: {"text": "otters"}',
        "Thought: I now know the final answer\nFinal Answer: otters hold hands while asleep",
    ],
    "write": ["Thought: I now know the final answer\nFinal Answer: two otters, hand in hand"],
}


class Scripted(BaseLLM):
    """An offline model: it answers by which task asks and how far its conversation has come."""

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
        if from_task.name == "write":
            crash_here("write")
        calls.append(from_task.name)
        print(f"  model: {from_task.name}")
        self._track_token_usage_internal({"prompt_tokens": 120, "completion_tokens": 30})
        answered = sum(m["role"] == "assistant" for m in messages)
        return ANSWERS[from_task.name][answered]


def make_crew() -> Crew:
    """The same crew every time: a resumed kickoff restores into these live objects."""
    llm = Scripted(model="scripted")
    researcher = Agent(
        role="researcher", goal="find facts", backstory="careful", llm=llm, tools=[send_note]
    )
    writer = Agent(role="writer", goal="write poems", backstory="a poet", llm=llm)
    return Crew(
        agents=[researcher, writer],
        tasks=[
            Task(
                name="research",
                description="Find facts about otters.",
                expected_output="facts",
                agent=researcher,
            ),
            Task(name="write", description="Write a poem.", expected_output="a poem", agent=writer),
        ],
    )


def main() -> int:
    crew = durable_crew(make_crew(), run_id="poem")
    try:
        result = crew.kickoff()
    except LetItLoopError as err:  # a side effect in doubt: the message says what to do
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"research: {result.tasks_output[0].raw}")
    print(f"poem: {result.raw}")
    print(f"model calls this process: {len(calls)}")
    sent = NOTES.read_text().splitlines() if NOTES.exists() else []
    print(f"notes in notes.txt: {len(sent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
