"""Runs that need a person, one per argument: ``python notify_flows.py fail dead budget``."""

from __future__ import annotations

import os
import signal
import sys

from letitloop import approval, atomic_marker, durable, step
from letitloop.kernel._policy import Budget, Retry


def boom() -> None:
    raise ValueError("the CRM said no")


def unreachable() -> None:
    raise ConnectionError("connection refused")


@durable(run_id="notify-fail")
def fails() -> None:
    step("boom", boom)


@durable(run_id="notify-dead", retry=Retry(attempts=2, backoff=0.0, jitter=False))
def dead() -> None:
    step("flaky", unreachable)


@durable(run_id="notify-budget", budget=Budget(usd=0.01))
def over_budget() -> int:
    return step("big", int, "1", estimate=1.0)


@durable(run_id="notify-approve")
def publish() -> bool:
    return approval("publish", {"title": "Q3 report"}, wait=False).approved


@durable(run_id="notify-doubt")
def send_once() -> None:
    with atomic_marker("send") as should_execute:
        if should_execute:  # the first call dies inside: the send is in doubt
            os.kill(os.getpid(), signal.SIGKILL)


FLOWS = {
    "fail": fails,
    "dead": dead,
    "budget": over_budget,
    "approve": publish,
    "doubt": send_once,
}

if __name__ == "__main__":
    for name in sys.argv[1:]:
        try:
            FLOWS[name]()
        except Exception as exc:
            print(name, type(exc).__name__, flush=True)
