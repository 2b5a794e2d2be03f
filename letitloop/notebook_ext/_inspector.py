"""``RunInspector``: a run's steps in a notebook, each opening to its full output, its attempts
and their tracebacks.

``RunInspector()`` with no argument inspects the run of the notebook's last ``%%durable`` cell.
Current attempts are the table; attempts superseded by an edited cell are listed apart, greyed.
An approval's row says who decided, when, and with what comment. Everything is read through the
journal contract and shown as the journal's text previews: nothing is unpickled or imported.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from letitloop.errors import ConfigError, JournalError
from letitloop.journal._contract import ApprovalInfo, AttemptInfo, Journal
from letitloop.journal._preview import local_time, preview
from letitloop.kernel._runtime import resolve_journal
from letitloop.notebook_ext._failure import _ours
from letitloop.notebook_ext._render import status_html

_ROWS = 200  # step rows shown as buttons; a longer run says where the rest is
_FULL = 200_000  # characters of one output shown when a step is opened


def _on_kernel() -> Any:
    from letitloop.notebook_ext._widgets import _on_kernel as schedule

    return schedule()


class RunInspector(W.VBox):  # type: ignore[misc]
    """A run's steps (status, attempts, duration, cost, output preview), kept live; click a
    step to open its full output, attempts and tracebacks."""

    def __init__(self, run: str | None = None, *, journal: Journal | str | None = None) -> None:
        self._sub: Any = None
        if run is None:  # the notebook's last durable cell, in the journal that cell used
            run, journal = _last_cell_run(journal)
        self.journal = resolve_journal(journal)
        self.run_id = self.journal.find_run(run)
        self.opened: int | None = None
        self.header = W.HTML()
        self.rows = W.VBox()
        self.superseded = W.HTML()
        self.detail = W.HTML()
        self.detail.add_class("lil-step-detail")
        self.forks: list[Any] = []  # ForkedRun of every fork made here, newest last
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
        self._schedule = _on_kernel()
        self._sub = self.journal.subscribe(
            lambda _events: self._schedule(self.refresh), run_id=self.run_id
        )

    def __repr__(self) -> str:
        run_id = getattr(self, "run_id", "?")
        return f"RunInspector({run_id!r}): `lil runs show {run_id}` in a terminal"

    def refresh(self) -> None:
        """Read the run again (called on every pushed event of this run)."""
        detail = self.journal.get_run(self.run_id)
        r = detail.run
        self.attempts = detail.attempts
        self.epoch = r.epoch
        self.decisions = {a.position: a for a in self.journal.approvals(run_id=self.run_id)}
        self.header.value = (
            f"<b>{html.escape(r.run_id)}</b> · {status_html(r.status)} · {r.steps_done} steps "
            f"done · ${r.cost_micros / 1e6:.4f}{budget_html(r)}{ran_for_html(r)} · updated "
            f"{html.escape(local_time(r.updated))}"
        )
        current, old = split_attempts(detail.attempts)
        self.current = current
        self.rows.children = [self._row(a, current.count(a)) for a in current[:_ROWS]]
        if len(current) > _ROWS:
            more = f"{len(current) - _ROWS} more steps: `lil runs show {r.run_id}`"
            self.rows.children = (*self.rows.children, W.HTML(f"<i>{html.escape(more)}</i>"))
        self.superseded.value = superseded_html(old)
        if self.opened is not None:
            self.show_step(self.opened)

    def _row(self, a: AttemptInfo, _n: int) -> W.HBox:
        tries = sum(1 for x in self.attempts if x.position == a.position)
        button = W.Button(
            description=f"{a.position} {a.name}",
            tooltip="open: full output, attempts, tracebacks",
            layout=W.Layout(width="16em", min_width="16em", flex="0 0 auto"),
        )
        button.on_click(lambda _b, p=a.position: self.show_step(p))
        cells = W.HTML(row_html(a, tries, self.decisions.get(a.position)))
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
    ) -> Any:
        """Fork this run at a step (by default the opened one): a new run reusing the steps
        before it; run it with ``fork.run(workflow)``. Returns the ``ForkedRun``."""
        from letitloop.kernel._fork import fork_run

        at = self.opened if position is None else position
        if at is None:
            raise ConfigError(
                "no step is open to fork from", fix="click a step first, or pass its position"
            )
        made = fork_run(self.run_id, at, args=args, kwargs=kwargs, journal=self.journal)
        self.forks.append(made)
        self.fork_note.value = (
            f" forked: <code>{html.escape(made.run_id)}</code> reuses {made.reused} step(s); "
            f"run it with <code>letitloop.run_fork({html.escape(repr(made.run_id))}, "
            f"workflow)</code> or <code>lil runs resume {html.escape(made.run_id)}</code>"
        )
        return made

    def _fork_clicked(self) -> None:
        from letitloop.errors import LetItLoopError

        try:
            self.fork()
        except LetItLoopError as exc:  # shown in the widget: a click has no caller to raise to
            fix = f"<br>fix: {html.escape(exc.fix)}" if exc.fix else ""
            self.fork_note.value = f" <b>cannot fork</b>: {html.escape(exc.message)}{fix}"

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


def _last_cell_run(journal: Journal | str | None) -> tuple[str, Any]:
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


def split_attempts(attempts: list[AttemptInfo]) -> tuple[list[AttemptInfo], list[AttemptInfo]]:
    """The latest current attempt of each position, and the superseded attempts."""
    latest: dict[int, AttemptInfo] = {}
    old = []
    for a in attempts:
        if a.status == "superseded":
            old.append(a)
        else:
            latest[a.position] = a
    return [latest[p] for p in sorted(latest)], old


def row_html(a: AttemptInfo, tries: int, decision: ApprovalInfo | None) -> str:
    ms = f"{(a.ended - a.started) * 1000:.0f} ms" if a.started and a.ended else "-"
    shown = a.preview if a.preview is not None else (a.error or {}).get("message", "")
    if decision is not None:
        shown = decision_text(decision)
    cells = [
        a.kind,
        status_html(a.status),
        f"{tries} {'try' if tries == 1 else 'tries'}",
        ms,
        f"${a.cost_micros / 1e6:.4f}",
        f"<code>{html.escape(_short(shown or ''))}</code>",
    ]
    return " · ".join(cells)


def decision_text(d: ApprovalInfo) -> str:
    """``approved by ana@host at 2026-12-01 21:04:05: ship it`` (or pending)."""
    if d.status == "pending":
        return "pending: waiting for a decision"
    how = " (timed out)" if d.timed_out else ""
    when = f" at {local_time(d.decided_at)}" if d.decided_at else ""
    note = f": {d.comment}" if d.comment else ""
    return f"{d.status} by {d.decided_by or '?'}{when}{how}{note}"


def decision_html(d: ApprovalInfo) -> str:
    return f"<div class='lil-decision'><b>decision</b> {html.escape(decision_text(d))}</div>"


def attempts_html(attempts: list[AttemptInfo]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("attempt", "status", "started", "ms", "error"))
    rows = []
    for a in attempts:
        ms = f"{(a.ended - a.started) * 1000:.0f}" if a.started and a.ended else "-"
        err = a.error or {}
        what = f"{str(err.get('type', '')).rpartition('.')[2]}: {err.get('message', '')}"
        style = " style='opacity:0.55'" if a.status == "superseded" else ""
        rows.append(
            f"<tr{style}><td>{a.attempt}</td><td>{status_html(a.status)}</td>"
            f"<td>{html.escape(local_time(a.started)) if a.started else '-'}</td><td>{ms}</td>"
            f"<td>{html.escape(what) if err else ''}</td></tr>"
        )
    style = "<style>.lil-attempts td,.lil-attempts th{padding:1px 10px 1px 0}</style>"
    return f"{style}<table class='lil-attempts'><tr>{head}</tr>{''.join(rows)}</table>"


def superseded_html(old: list[AttemptInfo]) -> str:
    """Attempts an edited cell replaced, apart from the current ones (greyed, collapsed)."""
    if not old:
        return ""
    rows = "".join(
        f"<tr><td>{a.position}</td><td>{html.escape(a.name)}</td><td>{a.attempt}</td>"
        f"<td><code>{html.escape(_short(a.preview or ''))}</code></td></tr>"
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


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def budget_html(r: Any) -> str:
    """`` of $0.50 budget`` (and tokens) when the run has a journaled budget, else nothing."""
    if not getattr(r, "budget", None):
        return ""
    usd, tokens = r.budget
    parts = [f"${usd / 1e6:.4f}" if usd is not None else "", f"{tokens} tokens" if tokens else ""]
    return f" of {' + '.join(p for p in parts if p)} budget"


def ran_for_html(r: Any) -> str:
    """`` · ran 12 ms``: the time its tries ran, not the time since it was created."""
    seconds = getattr(r, "active_seconds", None)
    if seconds is None:
        return ""
    return f" · ran {seconds * 1000:.0f} ms" if seconds < 1 else f" · ran {seconds:.1f} s"
