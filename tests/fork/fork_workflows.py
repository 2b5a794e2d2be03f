"""Workflows the fork tests run in subprocesses (and import: ``lil runs fork --run`` does).

Every step that really executes appends a line ``name arg`` to the file ``$FORK_CALLS``, so a
test counts executions across processes; the step named ``$FORK_KILL_AT`` SIGKILLs its own
process. The journal is the default one (``$LIL_JOURNAL``).
"""

from __future__ import annotations

import os
import signal
import uuid

from letitloop import durable, step

STEPS = ("fetch", "summarize", "review", "publish")


def _work(name: str, customer: str) -> str:
    with open(os.environ["FORK_CALLS"], "a", encoding="utf-8") as f:
        f.write(f"{name} {customer}\n")
    if os.environ.get("FORK_KILL_AT") == name:  # die inside this step, as a spot eviction would
        os.kill(os.getpid(), signal.SIGKILL)
    return f"{name}:{customer}:{uuid.uuid4().hex[:8]}"


@durable
def pipeline(customer: str) -> list[str]:
    """Four steps; each output is new every time the step really runs."""
    return [step(name, _work, name, customer) for name in STEPS]


def calls() -> list[str]:
    path = os.environ["FORK_CALLS"]
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


@durable(run_id="{customer}")
def pay(customer: str) -> list[str]:
    """A fixed run id per customer: ``pay("erin")`` is run ``fork_workflows.pay:erin``."""
    return [step(name, _work, name, customer) for name in ("lookup", "charge")]
