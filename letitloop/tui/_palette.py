"""The command palette finds runs: type any unambiguous prefix of a run id or of its key (the
same lookup every ``lil`` command and ``RunInspector`` use, ``Journal.find_run``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual.command import Hit, Hits, Provider

from letitloop.errors import LetItLoopError
from letitloop.tui._plain import escaped, plain

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
                yield _hit(app, run_id, 0.5, exc.message)
            return
        except Exception:  # the journal is away: the app's title bar says so already
            return
        yield _hit(app, run_id, 1.0, "run detail")


def _hit(app: LilApp, run_id: str, score: float, help_text: str) -> Hit:
    """``Open run …``: the run id (and a journal error naming ids) shown as written."""
    words = f"Open run {run_id}"
    opener: Any = lambda: app.open_run(run_id)  # noqa: E731
    return Hit(score, plain(words), opener, text=words, help=escaped(help_text))
