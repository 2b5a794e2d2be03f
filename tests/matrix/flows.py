"""The matrix scenario's workflows (copied into each scenario's project as ``flows.py``).

The base runs are what every surface reads: one that completes, one that fails with a fix, one
whose process is SIGKILLed inside a step and that a second process completes, one SIGKILLed
inside a side effect (a marker in doubt), one waiting for an approval, one cancelled. Each
surface that acts gets runs of its own under its name as the key (an approval to approve and
resume, one to reject, cancel and reset, a dead letter to retry and budget, a marker in doubt to
resolve). Steps record their cost, so every surface has money to show.
"""

from __future__ import annotations

import time
from pathlib import Path

from letitloop import Retry, approval, atomic_marker, durable, record_cost, step
from letitloop.errors import ConfigError

GATE = Path(__file__).with_name("gate")  # the killed step may finish once this exists


def priced(value: object, usd: float, tokens: int) -> object:
    """A step's work that costs ``usd`` (as an LLM call's usage would be recorded)."""
    record_cost(usd, input_tokens=tokens, output_tokens=tokens // 4)
    return value


def _wait_gate() -> str:
    while not GATE.exists():
        time.sleep(0.02)
    return "opened"


def _forever() -> None:
    while True:  # killed here: the email may or may not have gone
        time.sleep(0.05)


@durable(name="flows.ok", run_id="a")
def ok() -> int:
    step("fetch", priced, {"rows": [1, 2, 3]}, 0.0042, 1200)
    total: object = step("sum", priced, 42, 0.0108, 3000)
    assert isinstance(total, int)
    return total


@durable(name="flows.broken", run_id="b")
def broken() -> None:
    step("load", priced, 1, 0.002, 400)

    def parse() -> None:
        raise ConfigError("the input file data.csv is missing", fix="put data.csv in the project")

    step("parse", parse)


@durable(name="flows.slow", run_id="d")
def slow() -> str:
    step("first", priced, 1, 0.001, 200)
    return str(step("wait", _wait_gate))  # killed here; completed by a second process


@durable(name="flows.halted", run_id="g")
def halted() -> None:
    step("begin", priced, 1, 0.0005, 100)

    def charge() -> None:
        raise RuntimeError("card declined")

    step("charge", charge)  # then cancelled by a person: a resume is refused


@durable(name="flows.effect", run_id="c-{who}")
def effect(who: str) -> str:
    step("prepare", priced, who, 0.0003, 50)
    with atomic_marker("send_email") as go:
        if go and not GATE.exists():
            _forever()
    return "sent"


@durable(name="flows.asks", run_id="e-{who}")
def asks(who: str) -> bool:
    step("draft", priced, f"hello {who}", 0.0007, 150)
    decision = approval("send", payload={"to": f"{who}@example.com"}, wait=False)
    return bool(decision.approved)


@durable(name="flows.dead", run_id="f-{who}")
def dead(who: str) -> None:
    def flaky() -> None:
        raise ConnectionError("the service is down")

    step("call", flaky, retry=Retry(attempts=2, backoff=0))
