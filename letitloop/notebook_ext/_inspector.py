"""``RunInspector``: a run's steps in a notebook, each opening to its full output, its attempts
and their tracebacks.

``RunInspector()`` with no argument inspects the run of the notebook's last ``%%durable`` cell.
The header is operate's summary of the run (steps done out of known, the time its tries really
ran, cost and budget); each row is operate's summary of a position (its current attempts summed),
so the inspector agrees with ``lil runs show`` and the lab on every number. Attempts superseded
by an edited cell are listed apart, greyed. An approval's row says who decided, when, and with
what comment; a marker in doubt says so. Everything is read through the journal's face and shown
as the journal's text previews: nothing is unpickled or imported.
"""

from __future__ import annotations

import html
import os
from typing import Any, NamedTuple

import ipywidgets as W

from letitloop import operate
from letitloop.errors import ConfigError, JournalError, LetItLoopError
from letitloop.journal import ApprovalInfo, AttemptInfo, Journal, RunDetail, preview, who
from letitloop.notebook_ext._base import error_html, journal_of, on_kernel
from letitloop.notebook_ext._failure import _ours
from letitloop.notebook_ext._render import decision_text, status_html

_ROWS = 200  # step rows shown as buttons; a longer run says where the rest is
_FULL = 200_000  # characters of one output shown when a step is opened
_SHORT = 80  # characters of an output preview in a row


class Fork(NamedTuple):
    """A fork made from the inspector: its run id, the steps it reuses, and how to run it."""

    run_id: str
    reused: int
    resumable: bool  # whether ``lil runs resume`` can run it by name
    journal: Journal

    def run(self, fn: Any = None) -> Any:
        """Run the fork from its fork point on and return its result (``letitloop.run_fork``)."""
        from letitloop import run_fork

        return run_fork(self.run_id, fn, journal=self.journal)


class RunInspector(W.VBox):  # type: ignore[misc]
    """A run's steps (status, tries, time, cost, output preview), kept live; click a step to
    open its full output, attempts and tracebacks."""

    def __init__(
        self, run: str | None = None, *, journal: Journal | str | os.PathLike[str] | None = None
    ) -> None:
        self._sub: Any = None
        if run is None:  # the notebook's last durable cell, in the journal that cell used
            run, journal = _last_cell_run(journal)
        self.journal = journal_of(journal)
        self.run_id = self.journal.find_run(run)
        self.opened: int | None = None
        self.header = W.HTML()
        self.rows = W.VBox()
        self.superseded = W.HTML()
        self.detail = W.HTML()
        self.detail.add_class("lil-step-detail")
        self.forks: list[Fork] = []  # every fork made here, newest last
        self.fork_button = W.Button(
            description="Fork from here",
            tooltip="a new run that reuses the steps before this one and runs from it on",
            layout=W.Layout(display="none"),  # shown once a step is opened
        )
        self.fork_button.on_click(lambda _b: self._fork_clicked())
        self.fork_note = W.HTML()
        forks = W.HBox([self.fork_button, self.fork_note])
        super().__init__([self.header, self.rows, self.superseded, self.detail, forks])
        self.add_class("lil-inspector")
        self.refresh()
        self._schedule = on_kernel()
        self._sub = self.journal.subscribe(
            lambda _events: self._schedule(self.refresh), run_id=self.run_id
        )

    def __repr__(self) -> str:
        run_id = getattr(self, "run_id", "?")
        return f"RunInspector({run_id!r}): `lil runs show {run_id}` in a terminal"

    def refresh(self) -> None:
        """Read the run again (called on every pushed event of this run)."""
        detail = self.journal.get_run(self.run_id)
        self.attempts = detail.attempts
        self.epoch = detail.run.epoch
        self.summary = operate.summary_of(self.journal, detail)
        self.decisions = {a.position: a for a in self.journal.approvals(run_id=self.run_id)}
        self.header.value = header_html(self.summary)
        current, old = split_attempts(detail)
        self.steps = operate.steps_of(current)
        doubted = {d.position for d in operate.doubts_of(detail)}
        self.rows.children = [self._row(s, s.position in doubted) for s in self.steps[:_ROWS]]
        if len(self.steps) > _ROWS:
            more = f"{len(self.steps) - _ROWS} more steps: `lil runs show {self.run_id}`"
            self.rows.children = (*self.rows.children, W.HTML(f"<i>{html.escape(more)}</i>"))
        self.superseded.value = superseded_html(old)
        if self.opened is not None:
            self.show_step(self.opened)

    def _row(self, s: operate.StepSummary, in_doubt: bool) -> W.HBox:
        button = W.Button(
            description=f"{s.position} {s.name}",
            tooltip="open: full output, attempts, tracebacks",
            layout=W.Layout(width="16em", min_width="16em", flex="0 0 auto"),
        )
        button.on_click(lambda _b, p=s.position: self.show_step(p))
        cells = W.HTML(row_html(s, self.decisions.get(s.position), in_doubt))
        row = W.HBox([button, cells])
        row.add_class("lil-step-row")
        return row

    def show_step(self, position: int) -> None:
        """Show one step's full output, all its attempts and the tracebacks of failed ones."""
        self.opened = position
        mine = [a for a in self.attempts if a.position == position]
        if not mine:
            self.detail.value = f"<i>no step at position {position}</i>"
            return
        latest = [a for a in mine if a.status != "superseded"] or mine
        a = latest[-1]
        parts = [f"<b>{html.escape(a.name)}</b> · {a.kind} · position {position}"]
        decision = self.decisions.get(position)
        if decision is not None:
            parts.append(decision_html(decision))
        parts.append("<div><b>output</b></div>" + _pre(self._full_output(a)))
        parts.append(attempts_html(mine))
        for x in mine:
            tb = (x.error or {}).get("traceback")
            if tb:
                title = f"traceback of attempt {x.attempt} ({html.escape(x.status)})"
                parts.append(f"<div><b>{title}</b></div>" + _pre(user_traceback(tb)))
        self.detail.value = "".join(f"<div>{p}</div>" for p in parts)
        self.fork_button.layout.display = None
        self.fork_button.description = f"Fork from {a.name}"

    def fork(
        self,
        position: int | str | None = None,
        *,
        args: Any = None,
        kwargs: Any = None,
    ) -> Fork:
        """Fork this run at a step (by default the opened one): a new run reusing the steps
        before it (``operate.fork``); run it with ``fork.run(workflow)``."""
        at = self.opened if position is None else position
        if at is None:
            raise ConfigError(
                "no step is open to fork from", fix="click a step first, or pass its position"
            )
        done = operate.fork(self.journal, self.run_id, at, by=who(), args=args, kwargs=kwargs)
        made = Fork(done.data["fork"], done.data["reused"], done.data["resumable"], self.journal)
        self.forks.append(made)
        self.fork_note.value = (
            f" {html.escape(done.message)}; run it with <code>letitloop.run_fork("
            f"{html.escape(repr(made.run_id))}, workflow)</code> or <code>lil runs resume "
            f"{html.escape(made.run_id)}</code>"
        )
        return made

    def _fork_clicked(self) -> None:
        try:
            self.fork()
        except LetItLoopError as exc:  # shown in the widget: a click has no caller to raise to
            self.fork_note.value = " <b>cannot fork</b>: " + error_html(exc.message, exc.fix)

    def _full_output(self, a: AttemptInfo) -> str:
        if a.status != "completed" or a.codec is None:
            return (a.error or {}).get("message", "") if a.error else "-"
        try:
            codec, data = self.journal.get_output(self.run_id, self.epoch, a.position, a.attempt)
        except JournalError:
            return a.preview or "-"
        shown = a.preview if codec == "pickle" else None
        return preview(codec, data, shown=shown, limit=_FULL)

    def close(self) -> None:
        if self._sub is not None:
            self._sub.close()
        super().close()


def _last_cell_run(journal: Journal | str | os.PathLike[str] | None) -> tuple[str, Any]:
    from IPython.core.getipython import get_ipython

    from letitloop.notebook_ext._cell import last_cell

    shell = get_ipython()
    found, used = last_cell(shell, journal) if shell is not None else (None, journal)
    if found is None:
        raise ConfigError(
            "RunInspector() shows the run of this notebook's last %%durable cell, and none has "
            "run yet",
            fix="run a %%durable cell first, or name a run: RunInspector('cell.ingest:')",
        )
    return found, used


def split_attempts(detail: RunDetail) -> tuple[RunDetail, list[AttemptInfo]]:
    """The run with its current attempts only, and the attempts an edited cell superseded."""
    current = [a for a in detail.attempts if a.status != "superseded"]
    old = [a for a in detail.attempts if a.status == "superseded"]
    return detail._replace(attempts=current), old


def header_html(s: operate.RunSummary) -> str:
    """``<id> · completed · 2/2 steps done · $0.0042 of $0.5000 budget · ran 46ms · updated
    ...``, then the run's error in one line, if it failed."""
    shown = operate.shown(s)
    budget = f" of {shown['budget']} budget" if s.budget is not None else ""
    ran = f" · ran {shown['duration']}" if s.seconds is not None else ""
    waiting = f" · {s.waiting} approval(s) waiting" if s.waiting else ""
    head = (
        f"<b>{html.escape(s.run_id)}</b> · {status_html(s.status)} · {shown['steps']} steps "
        f"done · {shown['cost']}{html.escape(budget)}{ran}{waiting} · updated "
        f"{html.escape(operate.local_time(s.updated))}"
    )
    if s.forked_from is not None:
        o = s.forked_from
        head += f"<br>forked from {html.escape(o.run_id)} at position {o.position}"
    if s.error:
        error = html.escape(operate.error_line(s.error))
        head += f"<br><span class='lil-run-error' style='color:#cf222e'>{error}</span>"
    return head


def row_html(s: operate.StepSummary, decision: ApprovalInfo | None, in_doubt: bool) -> str:
    a = s.latest
    shown = a.preview if a.preview is not None else operate.error_line(a.error)
    if decision is not None:
        shown = decision_text(decision)
    cells = [
        a.kind,
        status_html(s.status + (" (in doubt)" if in_doubt else "")),
        f"{s.attempts} {'try' if s.attempts == 1 else 'tries'}",
        operate.duration(s.seconds),
        operate.money(s.cost_micros),
        f"<code>{html.escape(operate.one_line(shown or '', _SHORT))}</code>",
    ]
    return " · ".join(cells)


def decision_html(d: ApprovalInfo) -> str:
    return f"<div class='lil-decision'><b>decision</b> {html.escape(decision_text(d))}</div>"


def attempts_html(attempts: list[AttemptInfo]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("attempt", "status", "started", "time", "error"))
    rows = []
    for a in attempts:
        style = " style='opacity:0.55'" if a.status == "superseded" else ""
        rows.append(
            f"<tr{style}><td>{a.attempt}</td><td>{status_html(a.status)}</td>"
            f"<td>{html.escape(operate.local_time(a.started))}</td>"
            f"<td>{operate.duration(operate.attempt_seconds(a))}</td>"
            f"<td>{html.escape(operate.error_line(a.error))}</td></tr>"
        )
    style = "<style>.lil-attempts td,.lil-attempts th{padding:1px 10px 1px 0}</style>"
    return f"{style}<table class='lil-attempts'><tr>{head}</tr>{''.join(rows)}</table>"


def superseded_html(old: list[AttemptInfo]) -> str:
    """Attempts an edited cell replaced, apart from the current ones (greyed, collapsed)."""
    if not old:
        return ""
    rows = "".join(
        f"<tr><td>{a.position}</td><td>{html.escape(a.name)}</td><td>{a.attempt}</td>"
        f"<td><code>{html.escape(operate.one_line(a.preview or '', _SHORT))}</code></td></tr>"
        for a in old
    )
    return (
        "<details class='lil-superseded' style='opacity:0.6'><summary>"
        f"{len(old)} superseded attempt{'s' if len(old) != 1 else ''} (replaced after the code "
        "changed; kept in the journal)</summary><table><tr><th>#</th><th>step</th>"
        f"<th>attempt</th><th>output</th></tr>{rows}</table></details>"
    )


def user_traceback(text: str) -> str:
    """A journaled traceback without letitloop's own frames (each a ``File`` line and its
    source line)."""
    out: list[str] = []
    skip = False
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith('File "'):
            skip = _ours(stripped.split('"')[1])
        elif not line.startswith(" "):
            skip = False  # the exception line, or "The above exception was ..."
        if not skip:
            out.append(line)
    return "\n".join(out)


def _pre(text: str) -> str:
    return (
        f"<pre style='white-space:pre-wrap;max-height:24em;overflow:auto'>{html.escape(text)}</pre>"
    )
