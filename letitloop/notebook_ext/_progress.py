"""The live progress line of a running ``%%durable`` cell.

One display, updated in place at most a few times a second: steps done (how many replayed from
the journal), the current step, elapsed time and cost. In a terminal IPython, where a display
cannot be updated, one summary line is printed at the end instead.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from letitloop.kernel._context import RunContext, observer_var

_INTERVAL = 0.25  # seconds between two updates of the display


class Progress:
    """Counts the steps of one cell's run and renders them; fed by the kernel's step observer."""

    def __init__(
        self, name: str, shell: Any, clock: Any = time.monotonic, live: bool | None = None
    ) -> None:
        self.name = name
        self.clock = clock
        self.started = clock()
        self.done = self.replayed = 0
        self.journaled = 0
        self.current = ""
        self.cost_micros = 0
        # updated in place in a Jupyter kernel; a terminal (or a widget's output area, where
        # JupyterLab does not apply display updates) gets one line at the end
        self.live = getattr(shell, "kernel", None) is not None if live is None else live
        self.handle: Any = None
        self.last_shown = self.started  # a quick cell shows only its final line

    @staticmethod
    @contextmanager
    def observing(progress: Progress | None) -> Iterator[None]:
        token = observer_var.set(progress.observe if progress is not None else None)
        try:
            yield
        finally:
            observer_var.reset(token)

    def observe(self, ctx: RunContext, position: int, name: str, status: str) -> None:
        self.done += 1
        self.replayed += status == "replayed"
        self.journaled = max(self.journaled, len(ctx.recorded), self.done)
        self.current = name
        self.cost_micros = ctx.spent_micros
        now = self.clock()
        if self.live and now - self.last_shown >= _INTERVAL:
            self.last_shown = now
            self._show()

    def text(self) -> str:
        elapsed = self.clock() - self.started
        parts = [f"{self.name}: {self.done}/{self.journaled} steps"]
        if self.replayed:
            parts.append(f"{self.replayed} replayed")
        if self.current:
            parts.append(f"last: {self.current}")
        parts.append(f"{elapsed:.1f}s")
        if self.cost_micros:
            parts.append(f"${self.cost_micros / 1e6:.4f}")
        return " · ".join(parts)

    def _bundle(self) -> dict[str, str]:
        text = self.text()
        return {
            "text/plain": text,
            "text/html": f"<div class='lil-progress'><code>{html.escape(text)}</code></div>",
        }

    def _show(self) -> None:
        from IPython.display import display

        if self.handle is None:
            self.handle = display(self._bundle(), raw=True, display_id=True)
        else:
            self.handle.update(self._bundle(), raw=True)

    def finish(self) -> None:
        """The final state: updated in place in a kernel, one printed line in a terminal."""
        if not self.done:
            return
        if self.live:
            self._show()
        else:
            print(self.text())
