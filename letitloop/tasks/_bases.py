"""Where an attempt starts: the tree it is compared with, agreed with the journal at every
point a runner can be killed.

The runner's files, under ``.letitloop/tasks/NAME/epoch-E/``:

    origin.json       the tree when the task began (the ``begin`` step)
    base-P.json       the tree before the first attempt of the step at position P
    after-P-A.json    the tree after attempt A at P, saved before its outcome is journaled; its
                      sha256 is part of that outcome (``"tree"``)

A file alone never says an attempt finished: a runner killed after saving ``after-P-A.json``
and before journaling attempt A left a file for an attempt the journal does not know. So the
base of attempt B at P is read from the journal: the tree after the latest attempt before B
whose rejection is journaled (checked against the sha256 journaled with it), else
``base-P.json``. When an attempt before B never reached the journal (the runner was killed),
B is that attempt run again: the tree is first put back to that base, undoing whatever the
interrupted invocation left, so it runs on the tree the interrupted one began with, and is
compared with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from letitloop.journal import AttemptInfo
from letitloop.kernel import RunContext, StepInfo
from letitloop.tasks import _tree
from letitloop.tasks._model import TaskStateError
from letitloop.tasks._tree import Snapshot


@dataclass(frozen=True)
class Start:
    """The tree an attempt starts from and what the journal says came before it."""

    before: Snapshot
    count: int  # this attempt's number among the step's finished invocations (1 = first)
    resumed: bool  # an earlier attempt here never reached the journal: this one re-runs it
    undone: tuple[str, ...] = ()  # paths the interrupted attempt left, put back
    lost: tuple[str, ...] = ()  # of those, the ones that could not be (binary, blocked)


def base_file(states: str, position: int) -> str:
    return f"{states}/base-{position}.json"


def after_file(states: str, position: int, attempt: int) -> str:
    return f"{states}/after-{position}-{attempt}.json"


def start(root: Path, states: str, ctx: RunContext, info: StepInfo) -> Start:
    """The base of attempt ``info.attempt`` (see the module), with the tree put back to it when
    this attempt runs an interrupted one again."""
    earlier = _earlier(ctx, info)
    rejected = [a for a in earlier if _rejected(a)]
    first = base_file(states, info.position)
    if rejected:
        last = rejected[-1]
        digest = _journaled_tree(ctx, last)
        if digest is None:  # journaled by a runner before trees were named per attempt
            before = _tree.load(root, first)
        else:
            before = _tree.load(root, after_file(states, info.position, last.attempt), digest)
        if before is None:
            raise TaskStateError(
                f"the tree after attempt {last.attempt} of step {info.name!r} (position "
                f"{info.position}) is journaled but its snapshot under {states} is missing",
                fix=f"`lil runs reset {ctx.run_id}` starts the task over from the tree as it is",
                run_id=ctx.run_id,
                position=info.position,
            )
        resumed = earlier[-1] is not last
    else:
        loaded = _tree.load(root, first)
        resumed = loaded is not None  # an attempt began here, and none of it was journaled
        before = loaded if loaded is not None else _tree.snapshot(root)
        if loaded is None:
            _tree.save(root, first, before)
    out = Start(before, len(rejected) + 1, resumed)
    if resumed:
        stray = _tree.changed(before, _tree.snapshot(root))
        if stray:
            lost = _tree.restore(root, before, stray)
            out = Start(before, out.count, True, tuple(stray), tuple(lost))
    return out


def save_after(root: Path, states: str, info: StepInfo, after: Snapshot) -> str:
    """Save the tree after this attempt (before the kernel journals its outcome); the sha256
    to journal with the outcome."""
    return _tree.save(root, after_file(states, info.position, info.attempt), after)


def _earlier(ctx: RunContext, info: StepInfo) -> list[AttemptInfo]:
    """The journaled attempts of this step before this one, oldest first (the journal reads
    its own writes: a rejection journaled a moment ago is there)."""
    detail = ctx.journal.get_run(ctx.run_id)
    mine = [
        a
        for a in detail.attempts
        if a.position == info.position and a.attempt < info.attempt and a.kind == "step"
    ]
    return sorted(mine, key=lambda a: a.attempt)


def _rejected(a: AttemptInfo) -> bool:
    return a.status == "failed" and (a.error or {}).get("class") == "invalid"


def _journaled_tree(ctx: RunContext, a: AttemptInfo) -> str | None:
    """The sha256 of the after-tree journaled with a rejected attempt's output (JSON only)."""
    codec, data = ctx.journal.get_output(ctx.run_id, ctx.epoch, a.position, a.attempt)
    if codec != "json":
        return None
    try:
        out = json.loads(data)
    except ValueError:
        return None
    tree = out.get("tree") if isinstance(out, dict) else None
    return tree if isinstance(tree, str) else None
