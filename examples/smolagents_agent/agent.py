"""A smolagents CodeAgent made durable with letitloop, on a scripted offline model.

    python agent.py [--crash-at final|email]

The agent looks a fact up, e-mails it to ops (a side effect: a line in outbox.txt, fenced by an
atomic_marker) and answers. ``durable_agent`` journals each answer of the model and each tool
call as a step of the run ``smolagents:CodeAgent:ops-mail``, in .letitloop/ beside this file.

--crash-at final SIGKILLs the process while the model writes its last answer (after the e-mail
went out); --crash-at email SIGKILLs it inside the e-mail tool, right after the e-mail was
written. Run it again without the flag: the journaled answers and tool calls replay, and the
e-mail is never sent twice.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from smolagents import CodeAgent, tool
from smolagents.models import ChatMessage, MessageRole, Model
from smolagents.monitoring import TokenUsage

from letitloop import LetItLoopError, atomic_marker
from letitloop.adapters.smolagents import durable_agent

HERE = Path(__file__).resolve().parent
OUTBOX = HERE / "outbox.txt"
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
TASK = "Find a fact about Paris and e-mail it to ops."


def crash_here(point: str) -> None:
    """SIGKILL this process if it was started with --crash-at POINT."""
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


@tool
def lookup(city: str) -> str:
    """Look up a fact about a city.

    Args:
        city: the city
    """
    print(f"  tool: lookup({city!r})")
    return {"Paris": "Paris has 20 arrondissements"}.get(city, "nothing known")


@tool
def send_email(to: str, body: str) -> str:
    """Send an e-mail: a side effect, fenced so that a resumed run never sends it twice.

    Args:
        to: the recipient
        body: the text
    """
    with atomic_marker("send_email") as should_execute:
        if should_execute:
            with OUTBOX.open("a", encoding="utf-8") as f:
                f.write(f"to {to}: {body}\n")
            print(f"  tool: send_email({to!r}) sent")
            crash_here("email")
    return f"sent to {to}"


ANSWERS = [
    'Thought: look it up.\n<code>\nfact = lookup(city="Paris")\nprint(fact)\n</code>',
    'Thought: tell ops.\n<code>\nreceipt = send_email(to="ops@example.com", body=fact)\n'
    "print(receipt)\n</code>",
    'Thought: done.\n<code>\nfinal_answer(fact + " (" + receipt + ")")\n</code>',
]


class Scripted(Model):
    """An offline model: it answers by how far the conversation has come, as a real model
    answers what it is shown."""

    calls = 0

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        position = sum(m.role == MessageRole.ASSISTANT for m in messages)
        if position == len(ANSWERS) - 1:
            crash_here("final")
        self.calls += 1
        print(f"  model: answer {position + 1}")
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=ANSWERS[position],
            token_usage=TokenUsage(input_tokens=120, output_tokens=30),
        )


def main() -> int:
    model = Scripted(model_id="scripted")
    agent = durable_agent(
        CodeAgent(tools=[lookup, send_email], model=model, verbosity_level=0), run_id="ops-mail"
    )
    try:
        answer = agent.run(TASK)
    except LetItLoopError as err:  # a side effect in doubt: the message says what to do
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"answer: {answer}")
    print(f"model calls this process: {model.calls}")
    sent = OUTBOX.read_text().splitlines() if OUTBOX.exists() else []
    print(f"e-mails in outbox.txt: {len(sent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
