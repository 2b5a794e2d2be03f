"""The scripted project's workflows (copied into each test's project as ``flows.py``): a run
that completes, one that fails with a fix, a dead letter, one that waits for approval, and two
that a test kills mid-run (one inside a side effect, one inside a step it later resumes)."""

from __future__ import annotations

import time
from pathlib import Path

from letitloop import Retry, approval, atomic_marker, durable, step
from letitloop.errors import ConfigError

GATE = Path(__file__).with_name("gate")
BIG = "x" * 30_000  # an output longer than one page


def _wait_gate() -> str:
    while not GATE.exists():
        time.sleep(0.02)
    return "opened"


@durable(name="flows.ok", run_id="a")
def ok() -> int:
    step("fetch", lambda: {"rows": list(range(20)), "text": BIG})
    return int(step("sum", lambda: 42))


@durable(name="flows.broken", run_id="b")
def broken() -> None:
    step("load", lambda: 1)

    def parse() -> None:
        raise ConfigError("the input file data.csv is missing", fix="put data.csv in the project")

    step("parse", parse)


@durable(name="flows.effect", run_id="c")
def effect() -> None:
    step("prepare", lambda: 1)
    with atomic_marker("send_email") as go:
        if go:
            while True:  # killed here: the email may or may not have gone
                time.sleep(0.05)


@durable(name="flows.slow", run_id="d")
def slow() -> str:
    step("first", lambda: 1)
    return str(step("wait", _wait_gate))  # killed here; resumed once the gate is open


@durable(name="flows.asks", run_id="e")
def asks() -> object:
    step("draft", lambda: "hello")
    return approval("send", payload={"to": "ana@example.com"}, wait=False)


@durable(name="flows.dead", run_id="f")
def dead() -> None:
    def flaky() -> None:
        raise ConnectionError("the service is down")

    step("call", flaky, retry=Retry(attempts=2, backoff=0))
