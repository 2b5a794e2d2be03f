"""What every notebook widget shares: the journal it reads, and the kernel loop its pushed
updates run on.

A widget takes ``journal=`` as a journal, a path or a ``postgresql://`` URL (None: the one the
project's ``lil`` commands find), opened through the journal's face, so a widget reads any
backend. Live updates arrive on the journal's background thread; a widget's Python-side changes
are handed to the kernel's own event loop (``on_kernel``), where cell code and button callbacks
run too.
"""

from __future__ import annotations

import asyncio
import html
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from letitloop.journal import Journal


def journal_of(spec: Journal | str | os.PathLike[str] | None) -> Journal:
    """The journal a widget reads: ``spec`` itself, else the journal it names (any backend)."""
    if spec is not None and not isinstance(spec, (str, os.PathLike)):
        return spec
    from letitloop.journal import open_journal

    return open_journal(spec)


def on_kernel() -> Callable[[Callable[[], None]], None]:
    """A function that runs callbacks on the kernel's event loop, where cell code runs. Outside
    a kernel (terminal IPython) there is none, and user code must not run on the journal's
    thread: pushed updates are then dropped, and show up when the cell runs again."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return lambda fn: None

    def schedule(fn: Callable[[], None]) -> None:
        loop.call_soon_threadsafe(fn)

    return schedule


def error_html(message: str, fix: str | None = None) -> str:
    """An action's refusal as a widget shows it: the message in red, then how to fix it."""
    shown = f"<span style='color:#b00'>{html.escape(message)}</span>"
    return shown + (f"<br>fix: {html.escape(fix)}" if fix else "")
