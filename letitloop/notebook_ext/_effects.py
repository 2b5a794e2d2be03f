"""``EffectsInDoubt``: side effects that started but never recorded completion, resolved from
the notebook.

A block under ``atomic_marker`` is *in doubt* when its process died between journaling the
intent and journaling completion: nobody knows whether the email went out. Only a person can
say, so each row explains its two answers and asks before journaling one (with an optional
comment): **Done** (it happened: the run skips the block when it continues) or **Redo** (it did
not: the block runs again, so if it had happened after all, it happens twice).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from letitloop.errors import LetItLoopError
from letitloop.journal._config import who
from letitloop.journal._contract import AttemptInfo, Journal
from letitloop.journal._preview import local_time
from letitloop.kernel._runtime import resolve_journal
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
    """Side effects in doubt across runs, each with Done / Redo (asked before, with a comment)."""

    def __init__(self, *, journal: Journal | str | None = None) -> None:
        self.journal = resolve_journal(journal)
        self.status = W.HTML()
        super().__init__([])
        self.add_class("lil-effects")
        self.refresh()

    def __repr__(self) -> str:
        found = self.doubtful()
        if not found:
            return "no side effects in doubt"
        return "\n".join(
            f"{a.name!r} of run {r} is in doubt: `lil effects resolve {r} {a.name} done|redo`"
            for r, a in found
        )

    def doubtful(self) -> list[tuple[str, AttemptInfo]]:
        found = []
        for info in self.journal.list_runs(limit=1 << 30):
            if info.status in ("completed", "running"):
                continue
            latest: dict[int, AttemptInfo] = {}
            for a in self.journal.get_run(info.run_id).attempts:
                if a.kind == "marker":
                    latest[a.position] = a
            found += [
                (info.run_id, a)
                for a in latest.values()
                if a.status != "completed" and a.resolution is None
            ]
        return found

    def refresh(self) -> None:
        rows: list[Any] = []
        for run_id, a in self.doubtful():
            rows.append(self._row(run_id, a))
        body = rows or [W.HTML("<i>no side effects in doubt</i>")]
        self.children = [W.HTML(EXPLAIN), *body, self.status] if rows else [*body, self.status]

    def _row(self, run_id: str, a: AttemptInfo) -> W.VBox:
        done = W.Button(description="Done", tooltip="it happened: the run skips the block")
        redo = W.Button(description="Redo", tooltip="it did not happen: the block runs again")
        since = f" · started {local_time(a.started)}" if a.started else ""
        label = W.HTML(f"<b>{html.escape(a.name)}</b> · {html.escape(run_id)}{since}")
        row = W.VBox([W.HBox([label, done, redo])])
        row.add_class("lil-effect")

        def ask(resolution: str) -> None:
            what = WHAT[resolution].format(name=a.name, run=run_id)
            confirm = Confirm(
                what,
                lambda comment: self.resolve(run_id, a.position, resolution, comment),
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
        by = who()
        try:
            self.journal.resolve_marker(run_id, position, resolution, by, comment or None)
        except LetItLoopError as exc:
            self.status.value = f"<span style='color:#b00'>{html.escape(exc.message)}</span>"
            return
        note = f" ({html.escape(comment)})" if comment else ""
        self.status.value = (
            f"marked {resolution} by {html.escape(by)}{note}: the run continues when it is "
            "called again (run its cell again)"
        )
        self.refresh()
