"""Agents that share memory: research, then write and critique in turns, approve, publish.

    python pipeline.py ["a topic"] [--crash-at research|critique|publish]

Three agents work on one blackboard (the run's durable memory). The researcher puts its facts
on the board; the writer and the critic take turns on the thread "review" until the critic
approves (at most four rounds); each agent's prompt is assembled from the board under a token
budget, the older turns summarized by a cheap model once they do not fit; a person approves the
post; it is published once into published/. Every board write, every context, every model
call is journaled in .letitloop/ beside this file, so a killed run resumes where it was: the
same board, the same thread, no model call made twice but the one in flight.

--crash-at POINT SIGKILLs this process at POINT, as the OOM killer would: in the researcher's
model call, in the critic's second one, or right after the post was written.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from letitloop import LetItLoopError, approval, atomic_marker, blackboard, durable, step
from letitloop.memory import Summarize, agents, board, context, handoff, text, thread
from letitloop.testing import FakeLLM

HERE = Path(__file__).resolve().parent
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
BUDGET_TOKENS = 90  # small on purpose: the thread outgrows it and gets summarized


def reply(prompt: str) -> str:
    """The offline models: each role answers from what its prompt holds, deterministically."""
    role, _, seen = prompt.partition("\n")
    if role == "researcher":
        return "Otters hold hands while they sleep. They use rocks as tools."
    if role == "writer" and "surprising fact" in seen:
        return "Draft 2: otters hold hands asleep, and their fur is the densest of any animal."
    if role == "writer":
        return "Draft 1: otters hold hands while they sleep and crack urchins on rocks."
    if role == "critic":
        return (
            "APPROVE: warm, short, surprising."
            if "densest" in seen
            else ("Too plain: add one surprising fact.")
        )
    return "Earlier: the writer drafted; the critic asked for one surprising fact."  # summarizer


llm = FakeLLM(replies=reply)


def crash_here(point: str) -> None:
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def ask(role: str, messages: list[dict[str, str]]) -> str:
    """One model call of an agent (the critic's second is where --crash-at critique kills)."""
    if role == "researcher":
        crash_here("research")
    if role == "critic" and sum(call.startswith("critic") for call in llm.calls) == 1:
        crash_here("critique")
    lines = [f"{m.get('name', m['role'])}: {m['content']}" for m in messages]
    return llm.complete("\n".join([role, *lines])).text


def summarize(prompt: str) -> str:
    return llm.complete("summarizer\n" + prompt).text


def prompt_for(role: str, label: str) -> list[dict[str, str]]:
    """An agent's context: its instructions and the brief (pinned), the facts, the thread."""
    return context(
        [
            text(f"You are the {role}.", role="system", pinned=True),
            board("brief"),
            board(tag="facts"),
            thread("review"),
        ],
        budget_tokens=BUDGET_TOKENS,
        strategy=Summarize(model=summarize, max_tokens=24),
        label=label,
    ).messages


@durable(name="newsletter", run_id="{topic}")
def newsletter(topic: str) -> str:
    memory = blackboard()
    memory.put("brief", f"A short, warm newsletter piece about {topic}.", pinned=True)
    review = agents.thread("review")
    facts = step("model:researcher", ask, "researcher", prompt_for("researcher", "research"))
    memory.put("facts", facts, tags=["facts"])
    handoff(to="writer", note="facts are on the board", by="researcher", thread=review)
    for rnd in range(1, 5):
        draft = step("model:writer", ask, "writer", prompt_for("writer", f"write-{rnd}"))
        review.say("writer", draft)
        memory.put("draft", draft, tags=["draft"])
        verdict = step("model:critic", ask, "critic", prompt_for("critic", f"critique-{rnd}"))
        review.say("critic", verdict)
        if verdict.startswith("APPROVE"):
            break
    post = memory.get("draft")
    assert post is not None
    decision = approval("publish", {"topic": topic, "post": post.value}, timeout="1h")
    if not decision.approved:
        return f"not published: {decision.comment or 'rejected'}"
    with atomic_marker("publish") as should_execute:
        if should_execute:
            path = HERE / "published" / f"{topic.replace(' ', '-')}.md"
            path.parent.mkdir(exist_ok=True)
            path.write_text(f"# {topic}\n\n{post.value}\n", encoding="utf-8")
            crash_here("publish")
            print(f"published {path.relative_to(HERE)} (draft v{post.version})")
    return post.value


def report(topic: str) -> None:
    """The conversation as the journal holds it, and what this process asked the models."""
    memory = blackboard(f"newsletter:{topic}")
    for turn in agents.thread("review", board=memory).turns():
        print(f"  {turn.version:>2} {turn.agent:<10} {turn.content}")
    print(f"model calls this process: {len(llm.calls)}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--") and a != CRASH_AT]
    topic = args[0] if args else "otters"
    try:
        print(f"result: {newsletter(topic)}")
    except LetItLoopError as exc:
        print(f"stopped: {exc.message}", file=sys.stderr)
        sys.exit(3 if exc.title == "run suspended" else 1)
    report(topic)
