"""The live progress line of a running ``%%durable`` cell.

One display, updated in place at most a few times a second: steps done (how many replayed from
the journal), the current step, elapsed time and cost, and while a ``step.map`` runs, one bar
for its items (done, running, failed, replayed) with a link to the engine's dashboard. In a
terminal IPython, where a display cannot be updated, one summary line is printed at the end.
Times and money are written with operate's formatting, as every surface writes them.

The line is fed by the runtime's step and map observers (``observer_var`` and
``map_observer_var`` of ``letitloop.kernel``): the magic drives the runtime, and these are how
it hears each step as it happens.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from letitloop import operate
from letitloop.kernel import MapUpdate, RunContext, map_observer_var, observer_var

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
        self.map: MapUpdate | None = None  # the step.map running now, or the last one

    @staticmethod
    @contextmanager
    def observing(progress: Progress | None) -> Iterator[None]:
        token = observer_var.set(progress.observe if progress is not None else None)
        map_token = map_observer_var.set(progress.observe_map if progress is not None else None)
        try:
            yield
        finally:
            map_observer_var.reset(map_token)
            observer_var.reset(token)

    def observe(self, ctx: RunContext, position: int, name: str, status: str) -> None:
        if status.startswith("waiting"):  # "waiting for capacity of LIMIT": not a step done
            self.current = f"{name} ({status})"
            if self.live:
                self._show()
            return
        self.done += 1
        self.replayed += status == "replayed"
        self.journaled = max(self.journaled, len(ctx.recorded), self.done)
        self.current = name
        self.cost_micros = ctx.spent_micros
        now = self.clock()
        if self.live and now - self.last_shown >= _INTERVAL:
            self.last_shown = now
            self._show()

    def observe_map(self, update: MapUpdate) -> None:
        self.map = update
        now = self.clock()
        finished = update.done + update.failed == update.total
        if self.live and (finished or now - self.last_shown >= _INTERVAL):
            self.last_shown = now
            self._show()

    def map_text(self) -> str:
        """``map 'embed' [######----] 60/100 · 3 running · 1 failed · 40 replayed``."""
        m = self.map
        if m is None:
            return ""
        width = 20
        filled = round(width * m.done / m.total) if m.total else width
        parts = [f"map {m.name!r} [{'#' * filled}{'-' * (width - filled)}] {m.done}/{m.total}"]
        parts += [f"{n} {what}" for n, what in ((m.running, "running"), (m.failed, "failed"))]
        parts.append(f"{m.replayed} replayed")
        return " · ".join(p for p in parts if not p.startswith("0 "))

    def text(self) -> str:
        elapsed = self.clock() - self.started
        parts = [f"{self.name}: {self.done}/{self.journaled} steps"]
        if self.replayed:
            parts.append(f"{self.replayed} replayed")
        if self.current:
            parts.append(f"last: {self.current}")
        parts.append(operate.duration(elapsed))
        if self.cost_micros:
            parts.append(operate.money(self.cost_micros))
        return " · ".join(parts)

    def _bundle(self) -> dict[str, str]:
        text = self.text()
        body = f"<code>{html.escape(text)}</code>"
        plain = text
        if (m := self.map) is not None:
            plain += "\n" + self.map_text()
            failed = f" · {m.failed} failed" if m.failed else ""
            link = (
                f" · <a href='{html.escape(m.dashboard, quote=True)}' target='_blank'>dashboard</a>"
                if m.dashboard
                else ""
            )
            body += (
                f"<div class='lil-map'><code>map {html.escape(repr(m.name))}</code> "
                f"<progress value='{m.done}' max='{max(m.total, 1)}'></progress> "
                f"<code>{m.done}/{m.total} · {m.running} running{failed} · "
                f"{m.replayed} replayed</code>{link}</div>"
            )
        return {"text/plain": plain, "text/html": f"<div class='lil-progress'>{body}</div>"}

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
            print(self.text() + (f"\n{self.map_text()}" if self.map is not None else ""))
