"""Real workflows whose every text a person sees in lil-tui is Textual/Rich markup: run ids, step
names, errors, an approval's name and payload, a marker's name, a splice's reason, path and author.

python markup_workflows.py JOURNAL marker   die (SIGKILL) inside the marker block: a doubt

Each text has no space in it, so a screen that wraps it keeps it on one line, and it is either
markup that stops Textual (``[/]`` with nothing to close) or markup that renders as something
else (bold, a link, a click that quits the app).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from letitloop import approval, atomic_marker, durable, record_cost, step  # type: ignore[attr-defined]

FLOW = "evil.flow"
RUN = "evil[/]run"
FLOW_ID = f"{FLOW}:{RUN}"
STEP1 = "s[bold]x[/bold]"
STEP2 = "t[link=https://evil.example]y[/link]"
ERROR = "boom[/][@click=app.quit]bye[/]"
OUTPUT = "out[bold]put[/bold]"
MODEL = "gpt[/]evil"
ASK_ID = "evil.ask:ask[/]x"
APPROVAL = "ok[bold]ship[/bold]?"
MARK_ID = "evil.mark:mark[/]er"
MARKER = "[@click=app.quit]send[/]"
LIVE_ID = "evil.live:live[/]run"
REASON = "[link=https://evil.example]trust-me[/link]"
BY = "[bold]agent[/bold]@host"
FOLDER = "src[bold]x"


def failing(journal: Path | str) -> Any:
    """Two timed steps with markup names and outputs, then an error whose text is markup."""

    def priced() -> str:
        time.sleep(0.01)
        record_cost(usd=0.01, input_tokens=3, output_tokens=4, model=MODEL)
        return OUTPUT

    @durable(journal=journal, name=FLOW, run_id=RUN)
    def run() -> None:
        step(STEP1, priced)
        step(STEP2, lambda: time.sleep(0.03) or {"k": "[/]"})
        raise ValueError(ERROR)

    return run


def asking(journal: Path | str) -> Any:
    """An approval with a markup name and payload; it suspends (``wait=False``) until decided."""

    @durable(journal=journal, name="evil.ask", run_id="ask[/]x")
    def run() -> Any:
        draft = step("draft[/]", lambda: {"title": "[bold]t[/bold]"})
        return approval(APPROVAL, payload=draft, wait=False)

    return run


def live(journal: Path | str) -> Any:
    """A run that fails while the dashboard is open: its alert is a notification."""

    @durable(journal=journal, name="evil.live", run_id="live[/]run")
    def run() -> None:
        step("live[/]step", lambda: 1)
        raise RuntimeError(ERROR)

    return run


def in_doubt(journal: Path | str) -> None:
    """Die inside a marker block: the effect is in doubt."""

    @durable(journal=journal, name="evil.mark", run_id="mark[/]er")
    def run() -> None:
        step("before[/]", lambda: 1)
        with atomic_marker(MARKER) as go:
            if go:
                os.kill(os.getpid(), signal.SIGKILL)

    run()


def splice_file(root: Path) -> Path:
    """A module under a folder whose name is markup, for a splice proposal."""
    folder = root / FOLDER
    folder.mkdir()
    src = folder / "pricing.py"
    src.write_text("def price(x):\n    return x * 2\n")
    return src


if __name__ == "__main__":
    if sys.argv[2] == "marker":
        in_doubt(sys.argv[1])
        sys.exit("not killed")
