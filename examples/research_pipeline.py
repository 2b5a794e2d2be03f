"""An AI research pipeline, crash-proof and cost-aware, on a fake model (runs offline).

    python examples/research_pipeline.py "durable agents"

Search is rate-limited once and retried with backoff; the draft is checked and rewritten with
the critique until it has four paragraphs; the polish step is cached, so a second run with the
same topic pays nothing for it; every attempt's cost lands in the journal, and the run suspends
rather than pass its $0.05 budget. Run it twice: the second run returns the journaled result.
"""

from __future__ import annotations

import sys

from letitloop import Budget, Invalid, Retry, durable, open_journal, record_cost, step
from letitloop.testing import FakeLLM, RateLimitError

DRAFT = "{t} matters.\n\nIt survives crashes.\n\nIt costs little.\n\nIt is easy to adopt."
llm = FakeLLM(
    replies=lambda p: (
        DRAFT.format(t=p.split(":")[1].split("\n")[0].strip()) if "Fix this" in p else p.upper()
    ),
    failures=[RateLimitError()],  # the first call is rate-limited
    latency=0.01,
)


def search(topic: str) -> list[str]:
    record_cost(usd=0.002)  # what the search API charges per call
    return [f"note {i} on {topic}" for i in range(3)]


def write_draft(topic: str, notes: list[str], feedback: str | None = None) -> str:
    return llm.complete(f"Write about: {topic}\n" + "\n".join(notes), feedback=feedback).text


def four_paragraphs(draft: str) -> object:
    return draft.count("\n\n") >= 3 or Invalid("need at least 4 paragraphs")


@durable(retry=Retry(attempts=4, backoff=0.05, max_backoff=0.5), budget=Budget(usd=0.05))
def research(topic: str) -> str:
    notes = step("search", search, topic, estimate=0.002)
    draft = step("draft", write_draft, topic, notes, validate=four_paragraphs)
    return step("polish", llm.complete, f"Polish: {draft}", cache=True).text


def main(topic: str) -> None:
    result = research(topic)
    journal = open_journal()
    run = next(r for r in journal.list_runs() if r.workflow.endswith("research"))
    print(f"result: {len(result.split())} words, run {run.run_id} {run.status}")
    print(f"model calls this process: {len(llm.calls)}")
    print(f"cost: ${run.cost_micros / 1e6:.6f}, saved by the cache: ${run.saved_micros / 1e6:.6f}")
    for a in journal.get_run(run.run_id).attempts:
        why = (a.error or {}).get("class") or a.cache or ""
        print(f"  {a.name:<7} attempt {a.attempt} {a.status:<9} {why}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "durable agents")
