"""A multi-agent conversation on the blackboard, for the crash tests (run as a subprocess).

    python conversation.py JOURNAL RUN_ID CALLS_LOG KILL_AT

Three agents take turns on the thread ``review`` (each turn: context assembled from the pinned
brief and the thread under a small budget, summarized by a cheap model when it overflows, then
the agent's model call); every model call appends ``<who> <prompt digest>`` (fsynced) to
CALLS_LOG before answering. The call numbered KILL_AT (1-based, counted in the log) prints
``INFLIGHT <n>`` and hangs, so the test can SIGKILL the process in the middle of it. Prints
``DONE`` at the end.
"""

import hashlib
import os
import sys
import time

from letitloop import durable, step
from letitloop.memory import Summarize, agents, blackboard, board, context, handoff, thread
from letitloop.testing import FakeLLM

journal, run_id, log, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
words = FakeLLM()  # only its deterministic replies: the calls are counted in the log


def model(who: str, prompt: str) -> str:
    with open(log, "a") as f:
        f.write(f"{who} {hashlib.sha256(prompt.encode()).hexdigest()[:12]}\n")
        f.flush()
        os.fsync(f.fileno())
    with open(log) as f:
        n = sum(1 for _ in f)
    if n == kill_at:
        print(f"INFLIGHT {n}", flush=True)
        time.sleep(300)  # the test kills the process here
    return f"{who}: {words.reply(prompt)}"


def summarizer(prompt: str) -> str:
    return model("summarizer", prompt)


AGENTS = ("researcher", "writer", "critic")


@durable(journal=journal, run_id=run_id, name="conversation")
def conversation() -> int:
    board_ = blackboard()
    board_.put("brief", "Write a short piece about otters for the newsletter.", pinned=True)
    review = agents.thread("review")
    for rnd in range(3):
        for agent in AGENTS:
            ctx = context(
                [board("brief"), thread("review")],
                budget_tokens=110,
                strategy=Summarize(model=summarizer, max_tokens=20),
                label=f"{agent}-{rnd}",
            )
            prompt = "\n".join(f"{m.get('name', m['role'])}: {m['content']}" for m in ctx.messages)
            review.say(agent, step(f"model:{agent}", model, agent, prompt))
        handoff(to="researcher", note=f"round {rnd} done", by="critic", thread=review)
    return len(review.turns())


conversation()
print("DONE", flush=True)
