"""What the journal knows about the code in an editor: the one module that turns runs, attempts
and approvals into hover text, code-lens titles and journal diagnostics.

``JournalView`` reads through the journal's contract only (never DuckDB), keeps what it read in
a cache that the owner's pushed events invalidate, and calls ``on_change`` when something the
editor shows may have changed. Every method that may reach the journal blocks: the server
calls them in a thread. The ``render_*`` and ``journal_findings`` functions are pure. What a
run is (its summary and the actions that apply), which side effects are in doubt (LIL103) and
how a time, a duration, an amount or an error is written come from ``letitloop.operate``, as on
every other surface; ``_escape`` keeps that text text in Markdown and lens titles.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from letitloop import operate as ops
from letitloop.lsp._analysis import DurableFunction, Finding, StepSite
from letitloop.lsp._escape import code, fenced, lens, shell, text

RECENT = 5  # runs shown in a hover
THROTTLE = 0.3  # seconds: at most one re-read of a busy run (or of the run list) per window
RUN_LIMIT = 10_000  # runs listed to find a file's workflows
PREVIEW_CHARS = 600
UNFINISHED = ("running", "interrupted", "failed", "suspended")

# Journal diagnostic codes (docs/editors.md lists them with the analysis codes).
JOURNAL_CODES = {
    "LIL101": ("error", "the last run failed at this step"),
    "LIL102": ("warning", "resuming the unfinished run will raise NonDeterminismError"),
    "LIL103": ("warning", "a side effect is in doubt"),
}


class FunctionState(NamedTuple):
    """What the journal holds for one durable function."""

    workflow: str | None  # the journal's workflow name, None if it never ran
    runs: tuple[ops.RunSummary, ...]  # newest first (up to RECENT), exact (from their steps)
    total: int  # how many runs the workflow has
    details: tuple[Any, ...]  # RunDetail of ``runs``, same order
    approvals: tuple[Any, ...] = ()  # pending ApprovalInfo of these runs
    cost_micros: int = 0  # what every run of the workflow cost (current epochs)


EMPTY = FunctionState(None, (), 0, ())


def workflow_candidates(path: str, fn: DurableFunction) -> tuple[str, ...]:
    """The workflow names a function may have been journaled under: ``name=`` if given, else
    ``module.qualname`` where the module is the file's stem (a script) or ends with it."""
    if fn.explicit:
        return (fn.explicit,)
    stem = Path(path).stem
    if stem == "__init__":
        stem = Path(path).parent.name
    return (f"{stem}.{fn.qualname}",)


class JournalView:
    """A cached, push-refreshed read model of one journal for the language server."""

    def __init__(self, spec: str | None, on_change: Callable[[set[str]], None]) -> None:
        self.spec = spec
        self.on_change = on_change
        self._journal: Any = None
        self._lock = threading.Lock()
        self._runs: dict[str, list[Any]] | None = None
        self._runs_read = 0.0  # when _runs was read (monotonic)
        # run id -> (read at, how long the read took, RunDetail)
        self._details: dict[str, tuple[float, float, Any]] = {}
        self._reading: set[str] = set()  # runs being read right now
        self._stale: set[str] = set()  # runs with events newer than their cached detail
        self._lists_stale = False
        self.behind = False  # stale data was served inside the throttle window
        self._approvals: list[Any] | None = None
        self._subscription: Any = None
        self.error: str | None = None  # why the journal cannot be read, if it cannot

    @functools.cached_property
    def path(self) -> Path:
        """The journal file (found once: the server's directory does not change)."""
        from letitloop.journal import find_journal

        return find_journal(self.spec)

    def _exists(self) -> bool:
        """A DuckDB journal exists once a workflow wrote it; a PostgreSQL one is a server's."""
        from letitloop.journal import find_location

        found = find_location(self.spec)
        return isinstance(found, str) or found.exists()

    @property
    def journal(self) -> Any:
        """The owner-backed journal, opened (and its owner started) on first use."""
        if self._journal is None:
            from letitloop.journal import open_journal

            self._journal = open_journal(self.spec)  # a DuckDB file's owner, or PostgreSQL
        return self._journal

    @property
    def location(self) -> str:
        return str(self.journal.location)

    def ready(self) -> bool:
        """Whether the journal exists (and is then subscribed to). Opening an editor must not
        create a journal: until a workflow has run, there is nothing to show."""
        if self._subscription is None:
            if not self._exists():
                return False
            self.start()
        return self._subscription is not None

    def start(self) -> None:
        """Subscribe to the owner's pushed events, if the journal exists (blocking: call it
        from a thread)."""
        if self._subscription is not None or not self._exists():
            return
        try:
            self._subscription = self.journal.subscribe(self._pushed)
            self.error = None
        except Exception as exc:  # the editor keeps working without the journal
            self.error = f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        if self._subscription is not None:
            self._subscription.close()

    def _pushed(self, events: list[Any]) -> None:
        runs = {e.run_id for e in events}
        with self._lock:
            self._lists_stale = True
            self._stale |= runs
        self.on_change(runs)

    def invalidate(self) -> None:
        with self._lock:
            self._runs, self._approvals = None, None
            self._details.clear()

    def _fresh_enough(self, read_at: float, stale: bool, took: float = 0.0) -> bool:
        """Serve a cached read unless events came after it and it is older than its window
        (THROTTLE, or three times what the read took): a run writing thousands of steps a
        second must not make every request re-read it. The server refreshes again once the
        window has passed (``behind``)."""
        if not stale:
            return True
        if time.monotonic() - read_at < max(THROTTLE, 3 * took):
            self.behind = True
            return True
        return False

    # -- reads (blocking) ----------------------------------------------------------------
    def _runs_by_suffix(self) -> dict[str, list[Any]]:
        """Runs (newest first) by every dotted suffix of their workflow name, so a function's
        candidates (``flows.pipeline``) find ``flows.pipeline`` and ``pkg.flows.pipeline``."""
        with self._lock:
            index = self._runs
            if index is not None and not self._fresh_enough(self._runs_read, self._lists_stale):
                index = None
        if index is None:
            with self._lock:
                self._lists_stale, self._approvals = False, None
                self._runs_read = time.monotonic()
            runs = sorted(
                self.journal.list_runs(limit=RUN_LIMIT), key=lambda r: r.updated, reverse=True
            )
            index = {}
            for run in runs:
                parts = run.workflow.split(".")
                for i in range(len(parts)):
                    index.setdefault(".".join(parts[i:]), []).append(run)
            with self._lock:
                self._runs = index
        return index

    def detail(self, run_id: str) -> Any:
        """A run with its attempts: cached, re-read at most once per window while it changes,
        and never by two threads at once (the others get the previous read meanwhile)."""
        with self._lock:
            cached = self._details.get(run_id)
            if cached is not None:
                read_at, took, found = cached
                if self._fresh_enough(read_at, run_id in self._stale, took):
                    return found
                if run_id in self._reading:
                    self.behind = True
                    return found
            self._reading.add(run_id)
            self._stale.discard(run_id)
        start = time.monotonic()
        try:
            found = self.journal.get_run(run_id)
        finally:
            with self._lock:
                self._reading.discard(run_id)
        with self._lock:
            self._details[run_id] = (start, time.monotonic() - start, found)
        return found

    def pending_approvals(self) -> list[Any]:
        """Pending approvals, if this kernel journals approvals (else none)."""
        with self._lock:
            cached = self._approvals
        if cached is None:
            reader = getattr(self.journal, "approvals", None)
            cached = list(reader(status="pending")) if reader is not None else []
            with self._lock:
                self._approvals = cached
        return cached

    def all_runs(
        self, path: str, fn: DurableFunction, limit: int
    ) -> tuple[list[ops.RunSummary], int]:
        """The newest ``limit`` runs of ``fn`` and how many it has (``[], 0`` when the journal
        is unreachable or it never ran)."""
        if not self.ready():
            return [], 0
        index = self._runs_by_suffix()
        runs = [r for c in workflow_candidates(path, fn) for r in index.get(c, ())]
        return [ops.summarize(r) for r in runs[:limit]], len(runs)

    def state(self, path: str, fn: DurableFunction) -> FunctionState:
        """The recent runs of ``fn`` with their attempts; EMPTY if the journal is unreachable."""
        try:
            if not self.ready():
                return EMPTY
            index = self._runs_by_suffix()
            runs = [r for c in workflow_candidates(path, fn) for r in index.get(c, ())]
            if not runs:
                return EMPTY
            details = tuple(self.detail(r.run_id) for r in runs[:RECENT])
            ids = {d.run.run_id for d in details}
            approvals = tuple(a for a in self.pending_approvals() if a.run_id in ids)
            waiting = {i: sum(a.run_id == i for a in approvals) for i in ids}
            recent = tuple(
                ops.summarize(d.run, detail=d, waiting=waiting[d.run.run_id]) for d in details
            )
            self.error = None
            spent = sum(r.cost_micros for r in runs)
            return FunctionState(recent[0].workflow, recent, len(runs), details, approvals, spent)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            return EMPTY


# -- rendering (pure) --------------------------------------------------------------------
def duration(attempt: Any) -> str:
    """How long an attempt ran (``-`` for one that never ended: killed, or running now)."""
    return ops.duration(ops.attempt_seconds(attempt))


def attempts_of(detail: Any, site: StepSite) -> list[Any]:
    """The attempts of ``site``'s step in one run (every position that journaled its name)."""
    kind = {"step": ("step", "child", "map"), "marker": ("marker",), "approval": ("approval",)}
    kinds = kind.get(site.kind, (site.kind,))
    return [a for a in detail.attempts if a.name == site.name and a.kind in kinds]


def _preview(value: str | None) -> str:
    if value is None:
        return ""
    return value if len(value) <= PREVIEW_CHARS else value[:PREVIEW_CHARS] + " …"


# Hovers are Markdown: every name, id, status and error in them comes from the file or the
# journal, and goes through ``_escape`` (code spans, escaped text, ``table=True`` in a table).


def render_step_hover(state: FunctionState, site: StepSite, now: float | None = None) -> str:
    """Markdown for a hover on a step, marker or approval call."""
    title = f"**{text(site.kind)} {code(site.name)}**"
    if not state.runs:
        return f"{title}\n\nNo run of this workflow in the journal yet."
    lines = [f"{title} · workflow {code(state.workflow)}", ""]
    lines += ["| run | status | attempts | duration | cost |", "|---|---|---|---|---|"]
    latest: Any = None
    for run, detail in zip(state.runs, state.details, strict=True):
        key = code(run.key, table=True)
        tries = attempts_of(detail, site)
        if not tries:
            lines.append(f"| {key} {ops.ago(run.updated, now)} | not reached | 0 | - | - |")
            continue
        last = tries[-1]
        latest = latest or (run, last)
        spent = sum(a.cost_micros for a in tries)
        status = last.status + (f" ({last.resolution})" if last.resolution else "")
        lines.append(
            f"| {key} {ops.ago(run.updated, now)} | {text(status)} | {len(tries)} "
            f"| {duration(last)} | {ops.money(spent)} |"
        )
    if latest is not None:
        run, last = latest
        lines += ["", f"Run {code(run.run_id)}"]
        if last.error:
            lines += ["", f"**Error:** {code(ops.error_line(last.error))}"]
        elif last.preview is not None:
            lines += ["", "Output:", *fenced(_preview(last.preview))]
    return "\n".join(lines)


def render_function_hover(
    state: FunctionState, fn: DurableFunction, now: float | None = None
) -> str:
    title = f"**durable {code(fn.qualname)}**"
    if not state.runs:
        return f"{title}\n\nNo run of this workflow in the journal yet."
    lines = [f"{title} · workflow {code(state.workflow)} · {state.total} runs", ""]
    lines += ["| run | status | steps | updated | cost |", "|---|---|---|---|---|"]
    for run in state.runs:
        shown = ops.shown(run)  # steps done out of known, as every surface writes them
        lines.append(
            f"| {code(run.run_id, table=True)} | {text(run.status)} | {shown['steps']} "
            f"| {ops.ago(run.updated, now)} | {shown['cost']} |"
        )
    last = state.runs[0]
    if last.error:
        lines += ["", f"**Last error:** {code(ops.error_line(last.error))}"]
    return "\n".join(lines)


def function_lens_title(state: FunctionState, now: float | None = None) -> str:
    if not state.runs:
        return "lil: no runs yet"
    last = state.runs[0]
    spent = state.cost_micros
    plural = "run" if state.total == 1 else "runs"
    when = ops.ago(last.updated, now)
    return lens(f"lil: {state.total} {plural} · last {last.status} {when} · {ops.money(spent)}")


def step_lens_title(state: FunctionState, site: StepSite) -> str | None:
    """The title of a step's lens (plain text; ``$(`` of an error kept text: ``_escape.lens``)."""
    if not state.details or site.name is None:
        return None
    tries = attempts_of(state.details[0], site)
    if not tries:
        return lens(f"○ not reached in the last run ({state.runs[0].status})")
    last = tries[-1]
    if last.status == "started" and site.kind == "approval":
        return "⏸ waiting for a decision"
    if last.status == "started" and state.runs[0].status != "running":
        return lens(f"… started, unfinished (run {state.runs[0].status})")
    mark = {"completed": "✓", "failed": "✗", "started": "…"}.get(last.status, "•")
    title = f"{mark} {last.status}"
    if (seconds := ops.attempt_seconds(last)) is not None:
        title += f" · {ops.duration(seconds)}"
    if len(tries) > 1:
        title += f" · {len(tries)} attempts"
    if last.error:
        title += f" · {ops.error_line(last.error)}"
    return lens(title)


def resumable(state: FunctionState) -> str | None:
    """The run id the "Resume last run" lens resumes, if resume is among the last run's actions
    (``operate.actions_for``: the rule every surface offers it by)."""
    if state.runs and "resume" in state.runs[0].actions:
        return state.runs[0].run_id
    return None


def fork_point(state: FunctionState, site: StepSite) -> tuple[str, int] | None:
    """The (run id, position) a "Fork from here" lens on ``site`` forks the last run at: the
    step's first journaled position, once it finished there (completed or failed; one still
    waiting is resumed, not forked) and while no process executes that run."""
    if not state.details or site.name is None or state.runs[0].holder is not None:
        return None
    tries = [a for a in attempts_of(state.details[0], site) if a.status != "superseded"]
    if not tries or not all(a.status in ("completed", "failed") for a in tries):
        return None
    return str(state.runs[0].run_id), min(a.position for a in tries)


def journal_findings(state: FunctionState, fn: DurableFunction) -> list[Finding]:
    """LIL101-LIL103 for one function from its latest run."""
    if not state.runs:
        return []
    run, detail = state.runs[0], state.details[0]
    found: list[Finding] = []
    by_name = {s.name: s for s in fn.steps if s.name is not None}
    if run.status == "failed":
        failed = [a for a in detail.attempts if a.status == "failed" and a.error]
        site = by_name.get(failed[-1].name) if failed else None
        if site is not None:
            found.append(
                Finding(
                    "LIL101",
                    f"the last run {code(run.run_id)} failed here ({ops.ago(run.updated)}): "
                    f"{code(ops.error_line(failed[-1].error))}",
                    "error",
                    site.span,
                    None,
                )
            )
    if run.status in UNFINISHED:
        found += _nondeterminism(run, detail, fn)
    # the side effects in doubt, by the rule every surface shows (a running run's marker may
    # just be executing its block: not in doubt)
    for d in ops.doubts_of(detail):
        site = by_name.get(d.marker)
        if site is not None and site.kind == "marker":
            resolve = shell("lil", "effects", "resolve", d.run_id, d.ref)
            found.append(
                Finding(
                    "LIL103",
                    f"marker {code(d.marker)} of run {code(d.run_id)} is in doubt: its "
                    "block started and never finished. Decide with "
                    f"{code(resolve + ' --done|--redo')} before resuming",
                    "warning",
                    site.span,
                    None,
                )
            )
    return found


def _nondeterminism(run: Any, detail: Any, fn: DurableFunction) -> list[Finding]:
    """A step whose name differs from the one journaled at its position (straight-line code:
    the n-th step of the body has position n while no loop or branch comes before it)."""
    journaled: dict[int, Any] = {}
    for a in detail.attempts:
        journaled[a.position] = a
    found: list[Finding] = []
    position = 0
    for site in fn.steps:
        if not site.straight or site.name is None:
            break
        old = journaled.get(position)
        if old is None:
            break
        if old.name != site.name or (old.kind == "marker") != (site.kind == "marker"):
            found.append(
                Finding(
                    "LIL102",
                    f"the unfinished run {code(run.run_id)} journaled {old.kind} {code(old.name)} "
                    f"at position {position}; this code calls {site.kind} {code(site.name)} "
                    "there, so resuming it raises NonDeterminismError. Restore the old order to "
                    f"resume, or start over with {code(shell('lil', 'runs', 'reset', run.run_id))}",
                    "warning",
                    site.span,
                    None,
                )
            )
            break
        position = old.next_position if old.next_position is not None else position + 1
    return found
