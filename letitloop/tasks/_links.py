"""Symbolic links an agent leaves are refused: removed, the entries put back, the attempt rejected.

A link is how an agent confined to the project (``codex --sandbox workspace-write``, Claude
Code's working directory) could reach past it through the runner: a restore, a check or a later
tool reading or writing ``src/calc.py`` would follow ``src/calc.py -> /home/me/.bashrc``, and a
link in place of ``src/`` redirects every path under it. So the runner accepts only regular
files and directories from an agent, wherever they are (inside ``paths`` or not, with or
without ``--strict``): each link the attempt created or retargeted is removed without being
followed, what it replaced (a file, a directory's files, an older link) is put back as the
attempt's base had it, and the attempt gets a failed check ``no symbolic links`` naming each
link and its target, which the agent reads as its critique. Links the project already had and
the agent left alone are not touched. A failed or timed-out attempt's links go with its other
edits (``_tree.restore``).
"""

from __future__ import annotations

from pathlib import Path

from letitloop.tasks import _tree
from letitloop.tasks._checks import CheckResult
from letitloop.tasks._tree import LINK, Snapshot

NAME = "no symbolic links"


def refuse(
    root: Path, before: Snapshot, after: Snapshot, changed: list[str], checks: list[CheckResult]
) -> tuple[list[str], Snapshot]:
    """Undo the links among ``changed`` (and the paths under a link that replaced a directory);
    append the failed check to ``checks``. Returns (the paths put back, the tree now)."""
    links = [p for p in changed if _tree.is_link(after.get(p))]
    if not links:
        return [], after
    refused = [p for p in changed if any(p == link or p.startswith(link + "/") for link in links)]
    lost = _tree.restore(root, before, refused)
    shown = ", ".join(f"{p} -> {after[p][0][len(LINK) :]}" for p in links)
    detail = (
        f"the attempt left symbolic links, which the task runner does not accept: {shown}. "
        "They were removed (not followed) and what they replaced was put back; write regular "
        "files instead"
    )
    if lost:
        detail += f" (could not put back: {', '.join(lost)})"
    checks.append(CheckResult(NAME, False, detail))
    return refused, _tree.snapshot(root)
