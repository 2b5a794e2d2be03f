"""A workflow another process runs while a surface (lil-tui, lil lsp) follows it on Postgres.

    python surface_workflows.py JOURNAL GATES STEPS

``gated`` runs STEPS steps; step ``i`` waits until the file ``GATES/go.<i>`` exists, so the test
decides when each step's records are written, and measures how long the surface takes to show
them. Each step writes ``GATES/done.<i>`` after its step returned (its ``ok`` is then durable).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from letitloop import durable, step

RUN_ID = "surface.gated:g1"


def gated(journal: str, gates: Path, steps: int) -> None:
    def wait(i: int) -> int:
        deadline = time.monotonic() + 120
        while not (gates / f"go.{i}").exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"gate {i} never opened")
            time.sleep(0.005)
        return i

    @durable(journal=journal, name="surface.gated", run_id="g1")
    def run() -> int:
        total = 0
        for i in range(steps):
            total += step(f"step_{i}", wait, i)
            (gates / f"done.{i}").touch()
        return total

    run()


if __name__ == "__main__":
    gated(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))
