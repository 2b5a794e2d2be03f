"""A test hook: the task runner SIGKILLs itself at a named point of an attempt's life.

``LIL_TASK_KILL_AT=POINT`` (or ``POINT@N``: the N-th time this process reaches it) makes the
runner send itself SIGKILL there, so a test reaches every point deterministically with a real
kill and checks that the same command continues as if nothing had happened. Points:

    begin       the task's first snapshot is saved, the ``begin`` step not yet journaled
    attempt     an attempt's base tree is ready (and an interrupted attempt's edits undone),
                the agent not yet started
    agent       the agent exited; nothing compared, restored or saved yet
    restore     one path of a restore was put back (each path reaches it)
    saved       the tree after the attempt is saved; its outcome not yet journaled
    returned    the attempt's outcome is built; the kernel has not journaled it
    turned      an agent's turn (its step) is journaled as completed

Unset (always, outside tests), ``reached`` is one environment lookup.
"""

from __future__ import annotations

import os
import signal

_ENV = "LIL_TASK_KILL_AT"
_counts: dict[str, int] = {}


def reached(point: str) -> None:
    """SIGKILL this process if ``LIL_TASK_KILL_AT`` names ``point`` (and this is its N-th time)."""
    wanted = os.environ.get(_ENV)
    if not wanted:
        return
    name, _, nth = wanted.partition("@")
    if name != point:
        return
    _counts[point] = _counts.get(point, 0) + 1
    if _counts[point] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
