"""ipywidgets for steering runs from a notebook: approve, inspect, resolve effects in doubt.

Each widget reads through the journal's face and acts through operate's actions (the same
``decide_approval`` and ``retry_dead_letter`` the CLI, lil-tui and the lab call), so a decision
taken here is journaled and refused exactly as it is anywhere else. Live updates come from the
journal's pushed events, handed to the kernel's own event loop (``_base.on_kernel``). Each widget
has a CSS class (``lil-approval``, ``lil-inspector``, ``lil-effects``, ``lil-retry``) as a
stable hook for browser tests and styling.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from letitloop import operate
from letitloop.errors import DeadLetteredError, LetItLoopError
from letitloop.journal import ApprovalInfo, EventInfo, Journal, match_approval, who
from letitloop.notebook_ext._base import error_html, journal_of, on_kernel
from letitloop.notebook_ext._effects import EffectsInDoubt
from letitloop.notebook_ext._inspector import RunInspector
from letitloop.notebook_ext._render import decision_text

__all__ = ["ApprovalWidget", "EffectsInDoubt", "RetryWidget", "RunInspector", "kept_output"]


class ApprovalWidget(W.VBox):  # type: ignore[misc]
    """A pending approval: payload preview, optional edit, comment, Approve / Reject.

    A decision made here or anywhere else (CLI, TUI, editor) disables the buttons, says who
    decided, and calls ``on_decided(row)``, whose output lands in the widget's output area.
    """

    def __init__(
        self,
        approval_id: str,
        *,
        journal: Journal | str | os.PathLike[str] | None = None,
        on_decided: Callable[[ApprovalInfo], Any] | None = None,
    ) -> None:
        self.journal = journal_of(journal)
        self.row = self._row(approval_id)
        self.on_decided = on_decided
        self.finished = False
        title = f"<b>approval {html.escape(self.row.name)!s}</b> · run {self.row.run_id}"
        self.title = W.HTML(title)
        self.preview = W.HTML(_pre(self.row.payload))
        text = json.dumps(self.row.payload, indent=2, ensure_ascii=False)
        self.edit = W.Textarea(  # no description: a label beside it would push it past the cell
            value=text,
            rows=min(max(text.count("\n") + 1, 3), 20),
            placeholder="the payload as JSON",
            layout=W.Layout(width="100%"),
        )
        self.comment = W.Text(placeholder="comment (optional)", description="comment")
        self.approve = W.Button(description="Approve", button_style="success", icon="check")
        self.reject = W.Button(description="Reject", button_style="danger", icon="times")
        self.status = W.HTML(self._status_text())
        self.output = W.Output()
        self.approve.on_click(lambda _b: self.decide(True))
        self.reject.on_click(lambda _b: self.decide(False))
        label = W.HTML("payload: edit it before approving (checked against the schema)")
        editable = [label, self.edit] if self.row.schema is not None else [self.preview]
        super().__init__(
            [self.title, *editable, self.comment, W.HBox([self.approve, self.reject])]
            + [self.status, self.output]
        )
        self.add_class("lil-approval")
        self._schedule = on_kernel()
        self._sub = self.journal.subscribe(self._on_events, run_id=self.row.run_id)
        if self.row.status != "pending":
            self._decided(self.row)

    def __repr__(self) -> str:  # what a terminal (or a frontend without widgets) shows
        r = self.row
        if r.status == "pending":
            return (
                f"approval {r.name!r} of run {r.run_id} is pending: decide with "
                f"`lil approvals approve {r.id}` (or reject), then run the cell again"
            )
        return f"approval {r.name!r} of run {r.run_id}: {r.status} by {r.decided_by}"

    def _row(self, approval_id: str) -> ApprovalInfo:
        return match_approval(approval_id, self.journal.approvals(limit=1 << 30))

    def decide(self, approved: bool) -> None:
        """What the buttons do: journal the decision (``operate.decide_approval``: the first
        one wins), then continue."""
        payload = None
        if approved and self.row.schema is not None:
            try:
                payload = json.loads(self.edit.value)
            except ValueError as exc:
                self.status.value = error_html(f"the payload is not valid JSON: {exc}")
                return
            if payload == self.row.payload:
                payload = None
        try:
            operate.decide_approval(
                self.journal,
                self.row.id,
                approved=approved,
                by=who(),
                comment=self.comment.value or None,
                payload=payload,
            )
        except LetItLoopError as exc:
            self.status.value = error_html(exc.message, exc.fix)
        row = self._row(self.row.id)
        if row.status == "pending":
            return  # a bad edit: fix it and click again
        self._decided(row)

    def _on_events(self, events: list[EventInfo]) -> None:
        if not events or any(e.kind == "answer" for e in events):
            self._schedule(self._refresh)

    def _refresh(self) -> None:
        row = self._row(self.row.id)
        if row.status != "pending":
            self._decided(row)

    def _decided(self, row: ApprovalInfo) -> None:
        if self.finished:
            return
        self.finished = True
        self.row = row
        self._sub.close()
        self.approve.disabled = self.reject.disabled = True
        self.edit.disabled = self.comment.disabled = True
        self.status.value = self._status_text()
        if self.on_decided is not None and row.status in ("approved", "rejected"):
            on_decided = self.on_decided
            kept_output(self.output, lambda: on_decided(row))
            self.status.value = self._status_text() + " · the run continued below"

    def _status_text(self) -> str:
        status = self.row.status
        if status == "pending":
            return "<i>waiting for a decision</i>"
        said = decision_text(self.row)  # "approved by ana@lab at ...": the status word in bold
        return f"<b>{html.escape(status)}</b>{html.escape(said.removeprefix(status))}"


class RetryWidget(W.VBox):  # type: ignore[misc]
    """Under a failed or dead-lettered cell: Retry re-arms the dead step (a fresh attempt budget;
    its history stays in the journal) and runs the cell again, its output landing below."""

    def __init__(
        self,
        run_id: str,
        *,
        journal: Journal | str | os.PathLike[str] | None = None,
        position: int | None = None,
        cause: BaseException | None = None,
        on_retry: Callable[[], Any] | None = None,
    ) -> None:
        self.journal = journal_of(journal)
        self.run_id, self.position, self.on_retry = run_id, position, on_retry
        what = "dead-lettered" if position is not None else "failed"
        why = ""
        if cause is not None:
            error = {"type": type(cause).__name__, "message": str(cause)}
            why = f": {html.escape(operate.error_line(error))}"
        self.title = W.HTML(f"<b>run {html.escape(run_id)}</b> {what}{why}")
        self.retry = W.Button(
            description="Retry",
            icon="redo",
            button_style="warning",
            tooltip=(
                "give the dead-lettered step new attempts and run this cell again"
                if position is not None
                else "run this cell again: finished steps replay, the failed one runs again"
            ),
        )
        rearm = "re-arms the step (its failed attempts stay in the journal) and "
        self.status = W.HTML(
            f"<i>Retry {rearm if position is not None else ''}runs this cell's code again; "
            "finished steps replay.</i>"
        )
        self.output = W.Output()
        self.retry.on_click(lambda _b: self.click())
        super().__init__([self.title, W.HBox([self.retry]), self.status, self.output])
        self.add_class("lil-retry")

    def __repr__(self) -> str:
        first = f"`lil runs retry {self.run_id}`, then " if self.position is not None else ""
        return f"run {self.run_id} failed: to retry, {first}run the cell again"

    def click(self) -> None:
        """What Retry does: re-arm a dead step, then run the cell again in this output area."""
        self.retry.disabled = True
        if self.position is not None:
            try:
                operate.retry_dead_letter(self.journal, self.run_id, by=who(), step=self.position)
            except LetItLoopError as exc:
                self.status.value = error_html(exc.message, exc.fix)
                self.retry.disabled = False
                return
        self.status.value = "<i>retrying…</i>"
        self.output.outputs = ()
        error = kept_output(self.output, self.on_retry or (lambda: None))
        if isinstance(error, DeadLetteredError):  # the next Retry re-arms the step that died now
            self.position = error.position
        self._after(error is None)

    def _after(self, ok: bool) -> None:
        status = self.journal.get_run(self.run_id).run.status
        if ok:
            self.status.value = f"retried by {html.escape(who())}: run {status}"
        else:  # the error shows below; the button stays for another try
            self.status.value = f"retried by {html.escape(who())}: failed again ({status})"
            self.retry.disabled = False


def kept_output(output: W.Output, fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn`` and keep what it prints, displays, returns or raises in ``output``'s own state.

    An ``Output`` used as a context manager relies on the browser to route messages into it, so
    whatever runs while no tab shows the notebook (a decision made in the terminal after the tab
    was closed) would be lost. Kept in the widget's state instead, it is there when the notebook
    is opened again. Returns the exception ``fn`` raised, if any (it is shown, not raised)."""
    from IPython.core.getipython import get_ipython
    from IPython.utils.capture import capture_output

    error: BaseException | None = None
    with capture_output(display=True) as captured:
        try:
            value = fn()
            if value is not None:
                from IPython.display import display

                display(value)
        except Exception as exc:  # shown in the output, as the cell would show it
            error = exc
    kept: list[dict[str, Any]] = []
    for name, text in (("stdout", captured.stdout), ("stderr", captured.stderr)):
        if text:
            kept.append({"output_type": "stream", "name": name, "text": text})
    for rich in captured.outputs:
        kept.append({"output_type": "display_data", "data": rich.data, "metadata": rich.metadata})
    if error is not None:
        kept.append(_error_output(get_ipython(), error))
    output.outputs = (*output.outputs, *kept)
    return error


def _error_output(shell: Any, exc: BaseException) -> dict[str, Any]:
    render = getattr(exc, "_render_traceback_", None)
    if render is not None:
        stb = render()
    elif shell is not None:
        stb = shell.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__, 0)
    else:
        import traceback

        stb = traceback.format_exception(exc)
    name = type(exc).__name__
    return {"output_type": "error", "ename": name, "evalue": str(exc), "traceback": stb}


def _pre(value: Any) -> str:
    return f"<pre>{html.escape(json.dumps(value, indent=2, ensure_ascii=False))}</pre>"
