"""Durable workflows the Jupyter tests run for real, in subprocesses (and in the test process).

python workflows.py JOURNAL pipeline         two steps with JSON outputs and a recorded cost
                                             (the step $LAB_FAIL_STEP names raises)
python workflows.py JOURNAL publish OUT      wait for an approval (with a schema), write OUT
python workflows.py JOURNAL killed           SIGKILL itself inside an atomic_marker block
python workflows.py JOURNAL slow GATE        step 1, wait until GATE exists, step 2
python workflows.py JOURNAL ask KEY          ask for approval and suspend (run release:KEY)
python workflows.py JOURNAL board            a blackboard with a pinned plan, and a handoff
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from letitloop import approval, atomic_marker, durable, record_cost, step

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "maxLength": 40}},
    "required": ["title"],
}


def _work(label: str, value: int) -> dict[str, Any]:
    if os.environ.get("LAB_FAIL_STEP") == label:  # a failed run, for the tests that need one
        raise RuntimeError(f"{label} failed (LAB_FAIL_STEP)")
    record_cost(usd=0.0001 * value)
    return {"label": label, "value": value * 10}


@durable(name="etl.pipeline", run_id="p1")  # module level: `lil runs resume` can import it
def pipeline() -> list[int]:
    a = step("fetch", _work, "fetch", 1)
    b = step("transform", _work, "transform", 2)
    return [a["value"], b["value"]]


def publish(journal: Path, out: Path) -> Any:
    @durable(journal=journal, name="blog.publish", run_id="post-1")
    def run() -> str:
        draft = step("draft", lambda: {"title": "Hello"})
        decision = approval("publish", draft, schema=SCHEMA)
        text = json.dumps({"approved": decision.approved, "payload": decision.payload})
        step("publish", out.write_text, text)
        return text

    return run


def killed(journal: Path) -> Any:
    @durable(journal=journal, name="shop.notify", run_id="n1")
    def run() -> None:
        step("prepare", lambda: "ready")
        with atomic_marker("send_email") as go:
            if go:
                os.kill(os.getpid(), signal.SIGKILL)

    return run


def slow(journal: Path, gate: Path) -> Any:
    def wait() -> str:
        while not gate.exists():
            time.sleep(0.05)
        return "opened"

    @durable(journal=journal, name="etl.slow", run_id="s1")
    def run() -> str:
        step("first", lambda: 1)
        return step("wait_gate", wait)

    return run


@durable(name="release", run_id="{key}")
def ask(key: str) -> bool:
    """Ask for approval and suspend until someone decides (``wait=False``)."""
    step("build", lambda: key)
    return approval("ship", {"version": key}, wait=False).approved


@durable(name="team.write", run_id="w1")
def board_run() -> str:
    """Two agents on a blackboard: a pinned plan, a draft in two versions, and a handoff."""
    from letitloop.memory import agents, blackboard, handoff

    board = blackboard()
    board.put("plan", "three sections", tags=["plan"], pinned=True)
    board.put("draft", "first try", tags=["draft"])
    board.put("draft", "second try", tags=["draft"])
    agents.thread("team").say("writer", "here is the draft")
    handoff(to="critic", note="check the facts", by="writer", thread="team")
    return "ok"


if __name__ == "__main__":
    where, what, *rest = sys.argv[1:]
    path = Path(where)
    os.environ["LIL_JOURNAL"] = str(path)
    if what == "pipeline":
        pipeline()
    elif what == "publish":
        publish(path, Path(rest[0]))()
    elif what == "killed":
        killed(path)()
    elif what == "slow":
        slow(path, Path(rest[0]))()
    elif what == "ask":
        from letitloop.errors import ApprovalPending

        try:
            ask(rest[0])
        except ApprovalPending:
            pass
    elif what == "board":
        board_run()
    else:
        raise SystemExit(f"unknown workflow {what}")
