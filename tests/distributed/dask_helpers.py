"""Reading the items' log lines (``start i pid`` / ``done i pid`` / ``effect i pid``)."""

from __future__ import annotations

import time
from pathlib import Path


def lines(tmp: Path) -> list[tuple[str, int, int]]:
    log = tmp / "log.txt"
    rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [(r[0], int(r[1]), int(r[2])) for r in rows if len(r) == 3]


def busy_worker(tmp: Path) -> int:
    """The pid of a worker process that is inside an item right now."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen = lines(tmp)
        done = {i for w, i, _ in seen if w == "done"}
        busy = [pid for w, i, pid in seen if w == "start" and i not in done]
        if busy:
            return busy[-1]
        time.sleep(0.01)
    raise AssertionError(f"no item in flight: {lines(tmp)}")
