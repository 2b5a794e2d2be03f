"""Asking before an irreversible action: what it will do, an optional comment, Confirm / Cancel.

Every widget button whose effect cannot be taken back (marking a side effect done or to be
redone) opens one of these instead of acting at once; the comment goes into the journal with
the action, next to who did it.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as W


class Confirm(W.VBox):  # type: ignore[misc]
    """``Confirm(what, act)``: says ``what`` happens, then ``act(comment)`` on Confirm."""

    def __init__(
        self,
        what: str,
        act: Callable[[str | None], None],
        on_close: Callable[[], None] | None = None,
        label: str = "Confirm",
    ) -> None:
        self.act, self.on_close = act, on_close
        self.question = W.HTML(f"<b>{html.escape(what)}</b> This cannot be undone.")
        self.comment = W.Text(
            placeholder="comment (optional, kept in the journal)",
            layout=W.Layout(width="100%"),
        )
        self.confirm = W.Button(description=label, button_style="danger")
        self.cancel = W.Button(description="Cancel")
        self.confirm.on_click(lambda _b: self._confirmed())
        self.cancel.on_click(lambda _b: self._closed())
        super().__init__([self.question, self.comment, W.HBox([self.confirm, self.cancel])])
        self.add_class("lil-confirm")

    def _confirmed(self) -> None:
        self.confirm.disabled = self.cancel.disabled = True
        self.act(self.comment.value.strip() or None)

    def _closed(self) -> None:
        if self.on_close is not None:
            self.on_close()
