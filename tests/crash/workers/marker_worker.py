"""A workflow with a side effect fenced by ``atomic_marker``, for test_markers.

    python marker_worker.py JOURNAL EFFECTS_FILE RUN_ID KILL RECONCILE [third]

KILL: ``none``; ``in_block`` (SIGKILL itself inside the marker block, right after the side
effect is written and fsynced); ``before_block`` (SIGKILL itself after the first step, before
the marker); ``in_after`` / ``in_third`` (inside step "after" / "third", after its line).
RECONCILE: ``none`` (no callback), ``done`` or ``redo`` (a callback returning it). With
``third``, a step "third" (appending ``third <pid>``, returning 0) follows "after".

Side effects are lines appended to EFFECTS_FILE: ``effect <pid>`` inside the block, ``after
<pid>`` in the step after it. Prints ``RESULT <value>``, or ``INDOUBT <json>`` and exits 3.
"""

import json
import os
import signal
import sys

from letitloop import InDoubtError, atomic_marker, durable, step

journal, effects, run_id, kill, reconcile = sys.argv[1:6]
MARKER = "send-email"


def append(text: str) -> None:
    with open(effects, "a") as f:
        f.write(f"{text} {os.getpid()}\n")
        f.flush()
        os.fsync(f.fileno())


def decide(marker) -> str:  # type: ignore[no-untyped-def]
    append(f"reconcile:{marker.name}:{marker.position}:{marker.attempt}")
    return reconcile


def after() -> int:
    append("after")
    if kill == "in_after":
        os.kill(os.getpid(), signal.SIGKILL)
    return 2


def third() -> int:
    append("third")
    if kill == "in_third":
        os.kill(os.getpid(), signal.SIGKILL)
    return 0


@durable(journal=journal, run_id=run_id, name="markers")
def workflow() -> str:
    first = step("before", lambda: 40)
    if kill == "before_block":
        os.kill(os.getpid(), signal.SIGKILL)
    with atomic_marker(MARKER, reconcile=None if reconcile == "none" else decide) as go:
        if go:
            append("effect")
            if kill == "in_block":
                os.kill(os.getpid(), signal.SIGKILL)
    second = step("after", after)
    if sys.argv[6:7] == ["third"]:
        second += step("third", third)
    return f"total={first + second}"


try:
    print(f"RESULT {workflow()}", flush=True)
except InDoubtError as exc:
    print("INDOUBT " + json.dumps({"str": str(exc), **exc.to_dict()}), flush=True)
    sys.exit(3)
