"""Workflows for the approval, resume, watch and supervise tests, run in real subprocesses.

Each step appends "name pid time" to the file named by $HUMAN_LOG, so a test can count how many
times each step really ran, in which process and when. The journal is $LIL_JOURNAL.

    python -m human_workflows publish TITLE [--timeout S] [--on-timeout X] [--no-wait]
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from letitloop import approval, durable, step, suspend
from letitloop.errors import Suspended

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}},
    "required": ["title"],
}


def log(name: str, value: Any = None) -> Any:
    with Path(os.environ["HUMAN_LOG"]).open("a") as f:
        f.write(f"{name} {os.getpid()} {time.time():.6f}\n")
    time.sleep(float(os.environ.get("HUMAN_STEP_DELAY", "0")))
    return value


@durable(run_id="publish-1")
def publish(
    title: str, timeout: float | None = None, on_timeout: str = "reject", wait: bool = True
):
    draft = step("draft", log, "draft", {"title": title})
    d = approval("publish", draft, schema=SCHEMA, timeout=timeout, on_timeout=on_timeout, wait=wait)
    if d.approved:
        step("publish", log, "publish", d.payload)
    return {
        "approved": d.approved,
        "payload": d.payload,
        "by": d.by,
        "comment": d.comment,
        "timed_out": d.timed_out,
        "at": d.at,
    }


@durable(run_id="paused-1")
def paused(n: int) -> int:
    a = step("before", log, "before", n)
    suspend("waiting for the data team")
    return step("after", log, "after", a + 1)


@durable(run_id="ten-steps")
def ten_steps(kill_at: str) -> int:
    """Ten steps; SIGKILLs its own process at the given steps, the first time each is reached."""
    marks = Path(os.environ["HUMAN_LOG"]).with_suffix(".killed")
    total = 0
    for i in range(1, 11):
        if str(i) in kill_at.split(",") and f"{i}\n" not in _read(marks):
            with marks.open("a") as f:
                f.write(f"{i}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        total += step(f"step-{i}", log, f"step-{i}", i)
    return total


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def main(argv: list[str]) -> int:
    if argv[0] == "publish":
        opts = dict(zip(argv[2::2], argv[3::2], strict=False))
        kwargs: dict[str, Any] = {}
        if "--timeout" in opts:
            kwargs["timeout"] = float(opts["--timeout"])
        if "--on-timeout" in opts:
            kwargs["on_timeout"] = opts["--on-timeout"]
        if "--wait" in opts:
            kwargs["wait"] = opts["--wait"] == "yes"
        call = lambda: publish(argv[1], **kwargs)  # noqa: E731
    elif argv[0] == "paused":
        call = lambda: paused(int(argv[1]))  # noqa: E731
    else:
        call = lambda: ten_steps(argv[1])  # noqa: E731
    try:
        result = call()
    except Suspended as exc:
        print("SUSPENDED", json.dumps(exc.message), flush=True)
        return 3
    print("RESULT", json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    from human_workflows import main as imported_main  # the importable twin, not __main__

    sys.exit(imported_main(sys.argv[1:]))
