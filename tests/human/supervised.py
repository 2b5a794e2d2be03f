"""Functions under ``@supervise`` for test_supervise.py (imported by name in the child)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from human_workflows import log

from letitloop import durable, step, supervise


@supervise(max_restarts=3, backoff=0.1, healthy_after=30)
@durable(run_id="crunch")
def crunch(n: int) -> dict[str, int]:
    """Sum 0..n-1 in steps; SIGKILLs its own process before step 2 the first time."""
    marker = Path(os.environ["HUMAN_LOG"]).with_suffix(".killed")
    total = 0
    for i in range(n):
        if i == 2 and not marker.exists():
            marker.write_text("killed once")
            os.kill(os.getpid(), signal.SIGKILL)
        total += step(f"s{i}", log, f"s{i}", i)
    return {"total": total, "child": os.getpid()}


@supervise(max_restarts=1, backoff=0.05)
def always_dies() -> None:
    log("attempt")
    os.kill(os.getpid(), signal.SIGKILL)


@supervise
def fails(message: str) -> None:
    log("fails")
    raise ValueError(message)
