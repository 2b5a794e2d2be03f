"""``EffectsInDoubt``: side effects that started but never recorded completion, resolved from
the notebook.

A block under ``atomic_marker`` is *in doubt* when its process died between journaling the
intent and journaling completion: nobody knows whether the email went out. Which blocks are in
doubt is operate's one rule (``operate.doubts``: the latest attempt of each marker, in runs that
are neither completed nor running), so this widget lists exactly what ``lil effects list``, the
lab and lil-tui list. Only a person can say what happened, so each row explains its two answers
and asks before journaling one (with an optional comment): **Done** (it happened: the run skips
the block when it continues) or **Redo** (it did not: the block runs again, so if it had
happened after all, it happens twice).
"""

from __future__ import annotations

import html
import os
from typing import Any

import ipywidgets as W

from letitloop import operate
from letitloop.errors import LetItLoopError
from letitloop.journal import Journal, who
from letitloop.notebook_ext._base import error_html, journal_of
from letitloop.notebook_ext._confirm import Confirm

EXPLAIN = (
    "<div class='lil-effects-help'>Each side effect below started, but its process stopped "
    "before recording that it finished: only you know whether it happened. "
    "<b>Done</b>: it happened; the run skips the block when it continues. "
    "<b>Redo</b>: it did not happen; the block runs again when the run continues (if it did "
    "happen after all, it happens twice).</div>"
)
WHAT = {
    "done": "Mark {name!r} of run {run} as done: the run will skip the block when it continues.",
    "redo": "Mark {name!r} of run {run} to be redone: the block will run again when the run "
    "continues.",
}


class EffectsInDoubt(W.VBox):  # type: ignore[misc]
    """Side effects in doubt across runs (or in one ``run``), each with Done / Redo (asked
    before, with a comment)."""

    def __init__(
        self,
        run: str | None = None,
        *,
        journal: Journal | str | os.PathLike[str] | None = None,
    ) -> None:
        self.journal = journal_of(journal)
        self.run_id = self.journal.find_run(run) if run is not None else None
        self.status = W.HTML()
        super().__init__([])
        self.add_class("lil-effects")
        self.refresh()

    def __repr__(self) -> str:
        found = self.doubtful()
        if not found:
            return "no side effects in doubt"
        return "\n".join(
            f"{d.marker!r} of run {d.run_id} is in doubt ({d.why}): `{d.command('done')}` "
            "(or --redo)"
            for d in found
        )

    def doubtful(self) -> list[operate.Doubt]:
        """The side effects in doubt now, as every surface lists them."""
        return operate.doubts(self.journal, self.run_id)

    def refresh(self) -> None:
        rows: list[Any] = [self._row(d) for d in self.doubtful()]
        body = rows or [W.HTML("<i>no side effects in doubt</i>")]
        self.children = [W.HTML(EXPLAIN), *body, self.status] if rows else [*body, self.status]

    def _row(self, d: operate.Doubt) -> W.VBox:
        done = W.Button(description="Done", tooltip="it happened: the run skips the block")
        redo = W.Button(description="Redo", tooltip="it did not happen: the block runs again")
        since = f" · started {operate.local_time(d.started, relative=True)}" if d.started else ""
        label = W.HTML(
            f"<b>{html.escape(d.marker)}</b> · {html.escape(d.run_id)}{html.escape(since)}"
            f"<br><span class='lil-effect-why'>{html.escape(d.why)}</span>"
        )
        row = W.VBox([W.HBox([label, done, redo])])
        row.add_class("lil-effect")

        def ask(resolution: str) -> None:
            what = WHAT[resolution].format(name=d.marker, run=d.run_id)
            confirm = Confirm(
                what,
                lambda comment: self.resolve(d.run_id, d.position, resolution, comment),
                on_close=lambda: setattr(row, "children", row.children[:1]),
                label="Done: it happened" if resolution == "done" else "Redo: run it again",
            )
            row.children = [row.children[0], confirm]

        done.on_click(lambda _b: ask("done"))
        redo.on_click(lambda _b: ask("redo"))
        return row

    def resolve(
        self, run_id: str, position: int, resolution: str, comment: str | None = None
    ) -> None:
        """Journal the answer (who, and the comment, kept with the decision), then re-read."""
        try:
            done = operate.resolve_effect(
                self.journal, run_id, position, resolution, by=who(), comment=comment
            )
        except LetItLoopError as exc:
            self.status.value = error_html(exc.message, exc.fix)
            return
        note = f" (comment: {comment})" if comment else ""
        self.status.value = html.escape(done.message + note)
        self.refresh()
