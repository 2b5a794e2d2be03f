"""Reading the items' log lines (``start i pid`` / ``done i pid`` / ``effect i pid``) and
waiting for them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import wait_until


def lines(tmp: Path) -> list[tuple[str, int, int]]:
    log = tmp / "log.txt"
    rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [(r[0], int(r[1]), int(r[2])) for r in rows if len(r) == 3]


def busy_worker(tmp: Path) -> int:
    """The pid of a worker process that is inside an item right now."""

    def busy() -> int | None:
        seen = lines(tmp)
        done = {i for w, i, _ in seen if w == "done"}
        inside = [pid for w, i, pid in seen if w == "start" and i not in done]
        return inside[-1] if inside else None

    pid = wait_until(busy, 30, what=lambda: f"an item in flight: {lines(tmp)}", interval=0.01)
    assert pid is not None
    return pid


def wait_lines(
    tmp: Path, what: str, count: int, proc: subprocess.Popen[str], limit: float = 90
) -> None:
    """Wait for ``count`` log lines of kind ``what`` while the orchestrator ``proc`` runs."""

    def enough() -> bool:
        if sum(1 for w, _, _ in lines(tmp) if w == what) >= count:
            return True
        assert proc.poll() is None, f"orchestrator exited early: {proc.communicate()}"
        return False

    wait_until(enough, limit, what=lambda: f"{count} {what!r} lines: {lines(tmp)}")
