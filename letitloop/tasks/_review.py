"""``--review``: the agent's edits to Python definitions become splice proposals a person applies.

For each Python file the task changed, every top-level function or class whose source differs
from the tree when the task began is put back as it was, and its new source is journaled as a
pending proposal (``letitloop.splice.propose_splice``), to apply from the CLI (``lil splice
apply ID``), the TUI, the lab extension or the editor. What is not a change to an existing
definition (a new file, a new function, module-level code, other files) stays in the tree as the
agent left it, and is listed in the task's result.

The plan (each file's new text) is saved before any file is rewritten, so a runner killed here
proposes the same definitions when it runs again, and a definition already proposed is not
proposed twice. The plan read back is checked like a snapshot (each path inside the tree, each
text a string) and files are rewritten through ``_files``, never through a link.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from letitloop.tasks import _files, _tree
from letitloop.tasks._model import TaskStateError

_MAX_PLAN = 1 << 32  # bytes


def propose_definitions(name: str, root: Path, states: str) -> list[dict[str, Any]]:
    """Turn changed definitions into pending proposals; return them as plain data."""
    from letitloop.kernel import current_run
    from letitloop.splice._ops import list_targets, replace, source_of
    from letitloop.splice._proposals import list_proposals, propose_splice

    origin = _tree.load(root, f"{states}/origin.json") or {}
    plan_file = f"{states}/review-plan.json"
    plan = _load_plan(root, plan_file, origin)
    if plan is None:
        now = _tree.snapshot(root)
        plan = {
            p: now[p][1] or ""
            for p in _tree.changed(origin, now)
            if p.endswith(".py") and p in now and p in origin and now[p][1] is not None
        }
        _files.replace_file(root, plan_file, json.dumps(plan).encode(), state=True, mode=0o600)
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
            _files.write_file(root, rel, reverted.encode("utf-8"))
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


def _load_plan(root: Path, rel: str, origin: _tree.Snapshot) -> dict[str, str] | None:
    """The saved plan, None if there is none; a plan naming a path outside the tree, or one
    the task's first snapshot does not hold as text, is ``TaskStateError``."""
    data = _files.read_file(root, rel, limit=_MAX_PLAN, state=True)
    if data is None:
        return None
    try:
        plan = json.loads(data)
    except ValueError:
        plan = None
    ok = isinstance(plan, dict) and all(
        isinstance(v, str) and _files.inside_tree(k) and origin.get(k, ("", None))[1] is not None
        for k, v in plan.items()
    )
    if not ok:
        raise TaskStateError(
            f"the review plan {rel} cannot be used: it is not a mapping of the task's Python "
            "files to their texts",
            fix="something changed the runner's files under .letitloop/tasks/: `lil runs reset "
            "lil.task:NAME` starts the task over",
        )
    return dict(plan)
