"""A research pipeline, crash-proof and cost-aware, on a fake model (runs offline).

    python pipeline.py ["a topic"] [--crash-at search|draft|polish|publish]

Search is paid for with record_cost(); the first model call is rate-limited and retried with
backoff; the draft is checked and rewritten with the critique until it has four paragraphs; the
polish step is cached, so another run with the same draft pays nothing for it; the run suspends
rather than pass its budget ($0.05, or $RESEARCH_BUDGET_USD); and a person approves the post
before it is published, exactly once, into published/. Every attempt and its cost is journaled
in .letitloop/ beside this file (this folder's pyproject.toml makes it a project of its own).

--crash-at POINT SIGKILLs this process at POINT, as the OOM killer would: inside the step of that
name, or right after the post was written for "publish". Run it again without the flag and it
goes on from there.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from letitloop import (
    Budget,
    Invalid,
    LetItLoopError,
    Retry,
    Suspended,
    approval,
    atomic_marker,
    durable,
    open_journal,
    record_cost,
    step,
)
from letitloop.testing import FakeLLM, RateLimitError

HERE = Path(__file__).resolve().parent
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
BUDGET = Budget(usd=float(os.environ.get("RESEARCH_BUDGET_USD", "0.05")))
DRAFT = "{t} matters.\n\nIt survives crashes.\n\nIt costs little.\n\nIt is easy to adopt."


def reply(prompt: str) -> str:
    """The fake model: one paragraph at first, four once it is given a critique."""
    if prompt.startswith("Write about:"):
        topic = prompt.split(":", 1)[1].split("\n")[0].strip()
        return DRAFT.format(t=topic) if "Fix this" in prompt else f"{topic} matters."
    return prompt.removeprefix("Polish: ").replace("It ", "It really ")


llm = FakeLLM(replies=reply, failures=[RateLimitError()], latency=0.01)  # 1st call: HTTP 429


def crash_here(point: str) -> None:
    """SIGKILL this process if it was started with --crash-at POINT."""
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def search(topic: str) -> list[str]:
    crash_here("search")
    record_cost(usd=0.002)  # what the search API charges per call
    return [f"note {i} on {topic}" for i in range(3)]


def write_draft(topic: str, notes: list[str], feedback: str | None = None) -> str:
    crash_here("draft")
    prompt = f"Write about: {topic}\n" + "\n".join(notes)
    return llm.complete(prompt, feedback=feedback).text


def four_paragraphs(draft: str) -> object:
    return draft.count("\n\n") >= 3 or Invalid("need at least 4 paragraphs")


def polish(draft: str) -> object:
    crash_here("polish")
    return llm.complete(f"Polish: {draft}")  # a response with usage: its cost is journaled


def publish(topic: str, text: str) -> str:
    """The side effect: a file in published/, written once whatever happens."""
    path = HERE / "published" / f"{topic.replace(' ', '-')}.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"# {topic}\n\n{text}\n", encoding="utf-8")
    return str(path.relative_to(HERE))


@durable(name="research", retry=Retry(attempts=4, backoff=0.05, max_backoff=0.5), budget=BUDGET)
def research(topic: str) -> str:
    notes = step("search", search, topic, estimate=0.002)
    draft = step("draft", write_draft, topic, notes, validate=four_paragraphs)
    text = step("polish", polish, draft, cache=True, estimate=0.001).text
    decision = approval("publish", {"topic": topic, "post": text}, timeout="1h")
    if not decision.approved:
        return f"not published: {decision.comment or 'rejected'}"
    with atomic_marker("publish") as should_execute:
        if should_execute:
            where = publish(topic, text)
            crash_here("publish")
            print(f"published {where}")
    return text


def report() -> None:
    """What the journal holds for the run just called, and what this process paid for."""
    journal = open_journal()
    latest = journal.list_runs(workflow="research")[0]  # most recently updated first
    detail = journal.get_run(latest.run_id)
    run = detail.run
    print(f"run {run.run_id} {run.status}")
    print(f"model calls this process: {len(llm.calls)}")
    print(f"cost: ${run.cost_micros / 1e6:.6f}, saved by the cache: ${run.saved_micros / 1e6:.6f}")
    for a in detail.attempts:
        why = (a.error or {}).get("class") or a.cache or ""
        print(f"  {a.kind:<8} {a.name:<8} attempt {a.attempt} {a.status:<9} {why}")


def main() -> int:
    args = [a for a in sys.argv[1:] if a not in ("--crash-at", CRASH_AT)]
    topic = args[0] if args else "durable agents"
    try:
        text = research(topic)
    except Suspended as stopped:  # over budget: `lil runs budget`, then run again
        print(f"suspended: {stopped.message}\n  fix: {stopped.fix}", file=sys.stderr)
        report()
        return 3
    except LetItLoopError as err:  # a side effect in doubt, for one: the message says what to do
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"result: {len(text.split())} words")
    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
