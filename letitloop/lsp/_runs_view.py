"""The view the main code lens opens: every run of one durable function, as a Markdown page.

``letitloop.showRuns`` renders the function's runs (newest first: status, steps, when, how long,
cost, the error, and the ``lil`` commands of the actions that apply to each), writes the page to
a file of its own under the user's cache directory, and asks the editor to open it
(``window/showDocument``). An editor without that request (Neovim 0.7) gets the same list in a
message and the page's path in the command's result. Rendering is pure; only ``write_view``
touches the disk. Runs are ``operate.RunSummary`` rows, their numbers and times written by
operate's rules, as on every surface.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from letitloop import operate as ops
from letitloop.lsp._escape import code, shell, text

VIEW_RUNS = 50  # runs listed on the page, newest first
MESSAGE_RUNS = 5  # runs listed in the fallback message


def run_summary(run: ops.RunSummary) -> dict[str, Any]:
    """One run as the command's result carries it (JSON for the client), written as shown
    (``steps``: done out of known, as every surface writes them)."""
    shown = ops.shown(run)
    return {
        "run_id": run.run_id,
        "status": run.status,
        "steps": shown["steps"],
        "started": ops.local_time(run.created),
        "updated": ops.local_time(run.updated),
        "duration": shown["duration"],
        "cost": shown["cost"],
        "error": ops.error_line(run.error) or None,
    }


def render_runs_view(
    workflow: str | None, qualname: str, path: str, runs: Sequence[ops.RunSummary], total: int,
    now: float | None = None,
) -> str:  # fmt: skip
    """Markdown listing the runs of ``qualname`` (defined in ``path``); every name, id, status
    and error goes through ``_escape``, as in the hovers."""
    title = f"# Runs of {code(workflow or qualname)}"
    where = f"{code(qualname)} in {code(path)}"
    if not runs:
        return (
            f"{title}\n\n{where} has no run in the journal yet. Call it once (or run the cell) "
            "and run the lens again.\n"
        )
    shown = f"the newest {len(runs)} of {total}" if total > len(runs) else f"{total}"
    lines = [title, "", f"{where}: {shown} run{'s' if total != 1 else ''}, newest first.", ""]
    lines += ["| run | status | steps | started | duration | cost |", "|---|---|---|---|---|---|"]
    for run in runs:
        cells = ops.shown(run)
        lines.append(
            f"| {code(run.run_id, table=True)} | {text(run.status)} | {cells['steps']} "
            f"| {ops.local_time(run.created, relative=True, now=now)} "
            f"| {cells['duration']} | {cells['cost']} |"
        )
    for run in runs:
        lines += ["", f"## {code(run.run_id)}: {text(run.status)}", ""]
        if run.current_step:
            lines.append(f"- last step: {code(run.current_step)}")
        if run.error:
            lines.append(f"- error: {code(ops.error_line(run.error))}")
        lines.append(f"- inspect: {code(shell('lil', 'runs', 'show', run.run_id))}")
        if "resume" in run.actions:  # the actions that apply (``operate.actions_for``)
            lines.append(f"- continue: {code(shell('lil', 'runs', 'resume', run.run_id))}")
        if "reset" in run.actions:
            lines.append(f"- start over: {code(shell('lil', 'runs', 'reset', run.run_id))}")
    return "\n".join(lines) + "\n"


def render_message(
    workflow: str | None, qualname: str, runs: Sequence[ops.RunSummary], total: int
) -> str:
    """The same list in a few lines, for an editor that cannot open a document."""
    if not runs:
        return f"letitloop: {qualname} has no run in the journal yet"
    head = f"letitloop: {total} run{'s' if total != 1 else ''} of {workflow or qualname}"
    rows = [
        f"  {r.run_id}  {r.status}  {ops.shown(r)['steps']} steps  {ops.duration(r.seconds)}  "
        f"{ops.ago(r.updated)}"
        for r in runs[:MESSAGE_RUNS]
    ]
    if total > MESSAGE_RUNS:
        rows.append(f"  … and {total - MESSAGE_RUNS} more")
    return "\n".join([head, *rows])


def views_dir() -> Path:
    """Where the pages go: ``$XDG_CACHE_HOME/letitloop/runs`` (``~/.cache`` by default), or the
    temporary directory when there is no home."""
    base = os.environ.get("XDG_CACHE_HOME") or (
        str(Path.home() / ".cache") if Path.home().is_dir() else tempfile.gettempdir()
    )
    return Path(base) / "letitloop" / "runs"


def write_view(workflow: str | None, qualname: str, text: str) -> Path:
    """Write the page atomically; one file per workflow, rewritten each time."""
    name = workflow or qualname
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:80]
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    folder = views_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"runs-{safe}-{digest}.md"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".runs-", suffix=".md")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, target)
    return target
