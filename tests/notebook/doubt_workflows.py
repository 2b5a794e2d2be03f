"""A workflow killed inside its ``atomic_marker`` blocks, run as a real subprocess by the
in-doubt tests: ``python doubt_workflows.py KEY PLAN``.

PLAN is a comma-separated list: ``kill:NAME`` SIGKILLs the process inside the block (or step)
NAME, ``v2`` runs the edited code (its first step renamed, so the journal's later steps are
superseded). The journal is $LIL_JOURNAL.
"""

from __future__ import annotations

import os
import signal
import sys

from letitloop import atomic_marker, durable, step

PLAN: list[str] = []


def here(name: str) -> str:
    """Where the plan may kill the process: inside a block or a step."""
    if f"kill:{name}" in PLAN:
        os.kill(os.getpid(), signal.SIGKILL)
    return name


@durable(name="nb.doubts", run_id="{key}", on_change="rerun")
def flow(key: str) -> str:
    step("prepare v2" if "v2" in PLAN else "prepare", here, "prepare")
    with atomic_marker("charge") as go:
        if go:
            here("charge")
    step("between", here, "between")
    with atomic_marker("email") as go:
        if go:
            here("email")
    return key


if __name__ == "__main__":
    PLAN[:] = sys.argv[2].split(",")
    print(flow(sys.argv[1]))
