"""``--review``: the agent's edits to Python definitions become splice proposals a person applies.

For each Python file the task changed, every top-level function or class whose source differs
from the tree when the task began is put back as it was, and its new source is journaled as a
pending proposal (``letitloop.splice.propose_splice``), to apply from the CLI (``lil splice
apply ID``), the TUI, the lab extension or the editor. What is not a change to an existing
definition (a new file, a new function, module-level code, other files) stays in the tree as the
agent left it, and is listed in the task's result.

The plan (each file's new text) is saved before any file is rewritten, so a runner killed here
proposes the same definitions when it runs again, and a definition already proposed is not
proposed twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from letitloop.tasks import _tree


def propose_definitions(name: str, root: Path, states: Path) -> list[dict[str, Any]]:
    """Turn changed definitions into pending proposals; return them as plain data."""
    from letitloop.kernel._context import current_run
    from letitloop.splice._ops import list_targets, replace, source_of
    from letitloop.splice._proposals import list_proposals, propose_splice

    origin = _tree.load(states / "origin.json") or {}
    plan_file = states / "review-plan.json"
    try:
        plan: dict[str, str] = json.loads(plan_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        now = _tree.snapshot(root)
        plan = {
            p: now[p][1] or ""
            for p in _tree.changed(origin, now)
            if p.endswith(".py") and p in now and p in origin and now[p][1] is not None
        }
        plan_file.write_text(json.dumps(plan), encoding="utf-8")
    ctx = current_run.get()
    journal = ctx.journal if ctx is not None else None
    run_id = ctx.run_id if ctx is not None else None
    done = {
        (p.path, p.target): p
        for p in list_proposals(journal=journal)
        if p.origin == run_id and p.state == "pending"
    }
    out = []
    for rel, new_text in sorted(plan.items()):
        old_text = origin[rel][1]
        if old_text is None:
            continue
        file = (root / rel).resolve()
        old_defs = {t.qualname for t in list_targets(old_text) if "." not in t.qualname}
        changed = [
            t.qualname
            for t in list_targets(new_text)
            if t.qualname in old_defs
            and "." not in t.qualname
            and source_of(new_text, t.qualname) != source_of(old_text, t.qualname)
        ]
        reverted = new_text
        for target in changed:
            reverted = replace(reverted, target, source_of(old_text, target)).source
        if changed:
            file.write_text(reverted, encoding="utf-8")
        for target in changed:
            prior = done.get((str(file), target))
            if prior is None:
                prior = propose_splice(
                    file,
                    target,
                    source_of(new_text, target),
                    reason=f"task {name}: the agent's edit, checks passed",
                    journal=journal,
                )
            out.append({"id": prior.id, "path": rel, "target": target})
    return out
