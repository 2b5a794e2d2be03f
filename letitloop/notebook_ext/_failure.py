"""What a failing ``%%durable`` cell shows: the user's frames and the root cause.

Python's traceback of a failing cell runs through the magic, the cell runner and the durable
runtime: some 40 lines of letitloop's frames between the cell and the user's function. Here
every frame from letitloop's own files is dropped, in the error and in the exceptions behind it
(a ``DeadLetteredError`` is raised ``from`` the ``RateLimitError`` of the step's last attempt),
and the result is what IPython shows (``_render_traceback_``, IPython's hook for exceptions that
render themselves). A dead-lettered step replayed from the journal has no live cause: its
journaled last error is named instead.
"""

from __future__ import annotations

import os
import types
from typing import Any

import letitloop.errors
from letitloop import operate
from letitloop.errors import DeadLetteredError, JournalError

_OURS = os.path.dirname(os.path.abspath(letitloop.errors.__file__)) + os.sep
_MAX_CHAIN = 16  # causes and contexts followed


def _ours(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_OURS)


def user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without letitloop's frames (a new chain: the original is left alone)."""
    kept = []
    while tb is not None:
        if not _ours(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    out: types.TracebackType | None = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def chain(exc: BaseException) -> list[BaseException]:
    """The exception and those behind it (causes, and contexts that Python would show)."""
    found: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in found and len(found) < _MAX_CHAIN:
        found.append(cur)
        cur = cur.__cause__ or (None if cur.__suppress_context__ else cur.__context__)
    return found


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception behind ``exc`` (the ``RateLimitError`` of a dead letter)."""
    return chain(exc)[-1]


def journaled_cause(journal: Any, exc: DeadLetteredError) -> str | None:
    """For a dead letter replayed from the journal: the last error its step journaled."""
    if exc.run_id is None or exc.position is None:
        return None
    try:
        attempts = journal.get_run(exc.run_id).attempts
    except JournalError:
        return None
    failed = [a for a in attempts if a.position == exc.position and a.error]
    if not failed:
        return None
    err = failed[-1].error or {}
    tries = err.get("tries") or len(failed)
    return f"{operate.error_line(err)} (the step's last journaled error, {tries} attempts)"


def tidy(shell: Any, exc: BaseException, journal: Any = None) -> BaseException:
    """Make ``exc`` render with the user's frames only (in place; returns ``exc``)."""
    for e in chain(exc):
        e.__traceback__ = user_frames(e.__traceback__)
    extra = None
    if isinstance(exc, DeadLetteredError) and exc.__cause__ is None and journal is not None:
        extra = journaled_cause(journal, exc)
    try:
        stb = list(shell.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__, 0))
    except Exception:  # a formatter that cannot cope: IPython's own rendering, unabridged
        return exc
    if extra is not None:
        stb.append(f"root cause: {extra}")
    exc._render_traceback_ = lambda: stb  # type: ignore[attr-defined]
    return exc
