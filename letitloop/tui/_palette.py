"""The command palette finds runs: type any unambiguous prefix of a run id or of its key (the
same lookup every ``lil`` command and ``RunInspector`` use, ``Journal.find_run``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual.command import Hit, Hits, Provider

from letitloop.errors import LetItLoopError

if TYPE_CHECKING:
    from letitloop.tui._app import LilApp


class RunLookup(Provider):
    """``Open run …`` for the run the typed text names, or why it names none."""

    async def search(self, query: str) -> Hits:
        text = query.strip()
        if len(text) < 2 or any(c.isspace() for c in text):
            return  # run ids and keys have no spaces: "go to splices" is for the other commands
        app: LilApp = self.app  # type: ignore[assignment]
        try:
            run_id = await asyncio.to_thread(app.model.journal.find_run, text)
        except LetItLoopError as exc:
            candidates: list[Any] = list(getattr(exc, "candidates", None) or [])[:5]
            for run_id in candidates:
                yield Hit(0.5, f"Open run {run_id}", _opener(app, run_id), help=exc.message)
            return
        except Exception:  # the journal is away: the app's title bar says so already
            return
        yield Hit(1.0, f"Open run {run_id}", _opener(app, run_id), help="run detail")


def _opener(app: LilApp, run_id: str) -> Any:
    return lambda: app.open_run(run_id)
