"""The team's weekly report, on a journal in PostgreSQL that every teammate's process shares.

    python team.py [--week N] [--crash-at fetch|summarize]

Four regions' numbers are fetched (each a step), a fake model from letitloop.testing summarizes
them, a person approves the summary (the process waits, and says how to decide), and it is
published once, into published.txt, inside an atomic_marker. The journal is the one this
folder's pyproject.toml names: start its server with ``python cluster.py start``.

--crash-at STEP SIGKILLs this process inside that step (``fetch``: the third region). Anyone
can continue the run from another process, or another machine: ``lil runs resume
report:week-49`` (PostgreSQL frees a dead process's lease at once).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from letitloop import approval, atomic_marker, durable, step
from letitloop.testing import FakeLLM

HERE = Path(__file__).resolve().parent
FETCHES = HERE / "fetches.log"  # one line each time a region is really fetched
PUBLISHED = HERE / "published.txt"
REGIONS = ["emea", "americas", "apac", "africa"]
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
llm = FakeLLM(replies=lambda prompt: "Revenue is up in every region but apac.")


def crash_here(point: str) -> None:
    """SIGKILL this process if it was started with --crash-at POINT."""
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def fetch(region: str, week: int) -> dict[str, int]:
    with FETCHES.open("a", encoding="utf-8") as f:
        f.write(f"{region} week {week}\n")
    if region == "apac":
        crash_here("fetch")
    return {"revenue": 1000 + 37 * len(region) * week % 500, "tickets": 3 * len(region)}


def summarize(numbers: list[dict[str, int]]) -> str:
    crash_here("summarize")
    return llm.complete(f"Summarize these numbers: {numbers}").text


def publish(week: int, summary: str) -> None:
    with PUBLISHED.open("a", encoding="utf-8") as f:
        f.write(f"week {week}: {summary}\n")


@durable(name="report", run_id="week-{week}")
def weekly_report(week: int) -> str:
    numbers = [step(f"fetch {region}", fetch, region, week) for region in REGIONS]
    summary = step("summarize", summarize, numbers)
    decision = approval("publish", {"week": week, "summary": summary}, timeout="1h")
    if not decision.approved:
        return f"not published: {decision.comment or 'rejected'}"
    with atomic_marker("publish") as should_execute:
        if should_execute:
            publish(week, summary)
    return f"published week {week}: {summary}"


def main() -> int:
    week = int(sys.argv[sys.argv.index("--week") + 1]) if "--week" in sys.argv else 49
    print(weekly_report(week))
    return 0


if __name__ == "__main__":
    sys.exit(main())
