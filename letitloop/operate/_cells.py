"""Which notebook a kernel runs, which run each of its ``%%durable`` cells continues, and the
badge a cell shows.

All notebook-identity logic lives here (the magic and the lab's server extension both use it),
so that a stabler identity (a notebook id kept in the notebook's metadata by the JupyterLab
extension) can replace the path in one function.

A cell's run key derives from the notebook's path (``stem-<hash of the path>``), and every cell
run journals that path as its argument (``notebook=``), so the journal knows which notebook each
run belongs to. That gives the two rules a rename needs:

- a notebook whose own key has no run for a cell **adopts** the run of a notebook path that no
  longer exists on disk (the file was renamed or moved), and the cell's output says so; only
  real notebook files adopt or are adopted (a terminal IPython, keyed by its directory, never);
- two notebooks that exist side by side never share a run: when the run under a notebook's key
  belongs to another notebook that still exists (a new ``Untitled.ipynb`` created after the old
  one was renamed), the notebook takes the next free key (``stem-<hash>~2``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import Any, NamedTuple

from letitloop.journal import EventInfo, Journal, RunInfo

_MAX_GENERATIONS = 50  # keys tried per notebook before giving up on sharing rules


class Claim(NamedTuple):
    """The run key a cell uses in this notebook, and what to tell the user about it."""

    key: str
    note: str | None = None  # shown in the cell's output (an adopted or ambiguous run)
    adopted_from: str | None = None  # the notebook path whose run this cell continues


def notebook_identity(shell: Any) -> str:
    """Which notebook this kernel runs: JupyterLab's session path, VS Code's file, else cwd."""
    for value in (
        os.environ.get("JPY_SESSION_NAME"),
        shell.user_ns.get("__session__"),
        shell.user_ns.get("__vsc_ipynb_file__"),
    ):
        if isinstance(value, str) and value:
            return os.path.abspath(value)
    return os.path.join(os.getcwd(), "ipython")


def path_key(notebook: str) -> str:
    """The key a notebook's path gives: its file name without extension, plus a path hash."""
    stem = os.path.splitext(os.path.basename(notebook))[0] or "notebook"
    digest = hashlib.sha256(notebook.encode()).hexdigest()[:8]
    return f"{stem}-{digest}"


def owner_of(journal: Journal, run_id: str) -> str | None:
    """The notebook path a cell run last journaled as its argument (None for runs made before
    paths were journaled, or by ``--run-id``). Read as JSON only: nothing is unpickled."""
    args = journal.get_run(run_id).args
    if args is None or args[0] != "json":
        return None
    try:
        decoded = json.loads(args[1])
    except ValueError:
        return None
    if isinstance(decoded, list) and len(decoded) == 2 and isinstance(decoded[1], dict):
        path = decoded[1].get("notebook")
        return path if isinstance(path, str) else None
    return None


_CLAIMED: dict[tuple[str, str, str], str] = {}  # (journal, workflow, notebook) -> key


def remembered_claim(journal: Journal, workflow: str, notebook: str) -> Claim:
    """``claim``, once per kernel: the key a cell got stays its key while the kernel lives (the
    kernel's notebook path is fixed at its start, and no other notebook takes a run whose
    notebook still exists), so re-running a cell costs no journal reads here. The note is
    said the first time only."""
    memo = (journal.journal_id, workflow, notebook)
    if memo in _CLAIMED:
        return Claim(_CLAIMED[memo])
    found = claim(journal, workflow, notebook)
    _CLAIMED[memo] = found.key
    return found


def claim(
    journal: Journal,
    workflow: str,
    notebook: str,
    exists: Callable[[str], bool] = os.path.exists,
) -> Claim:
    """The key of ``workflow``'s run for ``notebook``: its own, an adopted one, or a new one."""
    if not _is_file(notebook, exists):  # a terminal IPython or a kernel that did not say
        return Claim(path_key(notebook))  # which notebook it runs: no renames to follow
    runs: dict[str, RunInfo] = {
        r.key: r for r in journal.list_runs(workflow=workflow, limit=1 << 30)
    }
    base = path_key(notebook)
    free: str | None = None
    taken: set[str] = set()
    for n in range(1, _MAX_GENERATIONS + 1):
        key = base if n == 1 else f"{base}~{n}"
        if key not in runs:
            free = key
            break
        owner = owner_of(journal, runs[key].run_id)
        if owner is None or owner == notebook or not exists(owner):
            return Claim(key)  # ours (or its adopter is gone too)
        taken.add(key)  # another notebook, still on disk, continues this run
    if free is None:
        raise RuntimeError(f"{_MAX_GENERATIONS} notebooks share the path {notebook}")
    orphans = []
    for key, info in runs.items():
        if key in taken or key == free:
            continue
        owner = owner_of(journal, info.run_id)
        if owner == notebook:
            return Claim(key)  # adopted before: this notebook continues it
        if owner is not None and not exists(owner) and os.path.splitext(owner)[1]:
            orphans.append((key, owner, info))  # a notebook file that is gone
    if len(orphans) == 1:
        key, owner, info = orphans[0]
        note = (
            f"{os.path.basename(notebook)} continues run {info.run_id}, started in "
            f"{_shown(owner, notebook)}, which no longer exists (renamed or moved): its journaled "
            f"steps replay. Use %%durable --fresh to start over instead."
        )
        return Claim(key, note, owner)
    if len(orphans) > 1:
        where = ", ".join(sorted(_shown(o, notebook) for _, o, _ in orphans))
        note = (
            f"several notebooks that no longer exist ran {workflow} ({where}): this cell starts "
            f"a new run. To continue one, run the cell with --run-id KEY, KEY one of "
            f"{', '.join(sorted(k for k, _, _ in orphans))}."
        )
        return Claim(free, note)
    return Claim(free)


def _is_file(path: str, exists: Callable[[str], bool]) -> bool:
    return bool(os.path.splitext(path)[1]) and exists(path)


def _shown(path: str, relative_to: str) -> str:
    """A path as the user thinks of it: relative to the notebook's folder when it is near."""
    rel = os.path.relpath(path, os.path.dirname(relative_to))
    return rel if not rel.startswith("../..") else path


def badge(run: RunInfo, events: list[EventInfo], waiting: bool) -> str:
    """A cell's badge: ``replayed`` when its latest execution ran no step (every step came from
    the journal), ``waiting`` for a pending approval, else the run's status."""
    if run.status == "suspended" and waiting:
        return "waiting"
    if run.status != "completed":
        return run.status
    starts = [e.seq for e in events if e.kind == "run" and e.data.get("epoch") == run.epoch]
    if len(starts) < 2:
        return "completed"
    ran = any(e.kind == "step" and e.seq > starts[-1] for e in events)
    return "completed" if ran else "replayed"
