"""Durable workflows the CLI tests run, in the test process and in subprocesses.

python cli_workflows.py JOURNAL SENT_FILE    run ``notify_order`` and SIGKILL the process
                                             inside its ``send_email`` marker block
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from letitloop import atomic_marker, durable, step

NOTIFY_RUN = "tests.notify_order:order-1"


def pipeline(journal: Path, calls: list[str], name: str = "tests.pipeline", key: str = "p1") -> Any:
    """Three steps; every executed step is appended to ``calls``."""

    def work(label: str, value: int) -> dict[str, Any]:
        calls.append(label)
        return {"label": label, "value": value * 10}

    @durable(journal=journal, name=name, run_id=key)
    def run() -> list[int]:
        a = step("fetch", work, "fetch", 1)
        b = step("transform", work, "transform", 2)
        c = step("store", work, "store", 3)
        return [a["value"], b["value"], c["value"]]

    return run


def failing(journal: Path) -> Callable[[], Any]:
    @durable(journal=journal, name="tests.failing", run_id="f1")
    def run() -> None:
        step("load", lambda: "loaded")
        step("divide", lambda: 1 / 0)

    return run


def notifier(journal: Path | str, sent: Path | str, kill_inside: bool = False) -> Any:
    """A marker around an e-mail (a line in ``sent``); optionally die inside the block."""

    @durable(journal=journal, name="tests.notify_order", run_id="order-1")
    def notify_order() -> int:
        total = step("price", lambda: 42)
        with atomic_marker("send_email") as should_send:
            if should_send:
                with open(sent, "a", encoding="utf-8") as f:
                    f.write(f"email for order-1 ({total})\n")
                if kill_inside:
                    os.kill(os.getpid(), signal.SIGKILL)
        step("archive", lambda t: f"archived {t}", total)
        return total

    return notify_order


if __name__ == "__main__":
    notifier(sys.argv[1], sys.argv[2], kill_inside=True)()
    sys.exit("not killed")
