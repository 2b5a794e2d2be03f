"""Code actions as text: each action runs one ``letitloop.splice`` transform on the document's
text and turns the difference into line edits an editor applies.

No pygls here: an ``Action`` holds a title, a kind and ``LineEdit`` s (0-based lines, code-point
columns); the server converts them to a ``WorkspaceEdit``. Notebook cells are spliced with their
IPython magics masked as comments of the same length, so the edits apply to the real cell.
"""

from __future__ import annotations

import difflib
from typing import Any, NamedTuple

from letitloop.lsp._analysis import Analysis, Finding, enclosing_def, function_at, mask_cell
from letitloop.lsp._escape import lens
from letitloop.lsp._meaning import does_durable_work, step_name

QUICKFIX, REWRITE = "quickfix", "refactor.rewrite"


class LineEdit(NamedTuple):
    """Replace from (line, col) to (end_line, end_col) with ``text`` (code-point columns)."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


class Action(NamedTuple):
    title: str
    kind: str
    edits: tuple[LineEdit, ...]
    code: str | None = None  # the diagnostic code it fixes
    diff: str = ""
    command: tuple[str, list[Any]] | None = None  # run after the edit is applied


def line_edits(old: str, new: str) -> list[LineEdit]:
    """The smallest whole-line edits that turn ``old`` into ``new``."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    edits = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        text = "".join(b[j1:j2])
        if i2 == len(a) and a and not a[-1].endswith(("\n", "\r")):
            last = a[-1]
            edits.append(LineEdit(i1, 0, len(a) - 1, len(last), text))
        else:
            edits.append(LineEdit(i1, 0, i2, 0, text))
    return edits


def apply_edits(text: str, edits: list[LineEdit]) -> str:
    """Apply edits (as an editor would: all against the original text)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[min(line, len(lines))] + col

    out = text
    for e in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        out = out[: offset(e.line, e.col)] + e.text + out[offset(e.end_line, e.end_col) :]
    return out


def _spliced(source: str, transform: Any, *args: Any, **kwargs: Any) -> tuple[list[LineEdit], str]:
    """Run a splice transform on (masked) source: the edits for the real text and the diff."""
    masked, _ = mask_cell(source)
    result = transform(masked, *args, **kwargs)
    if result.unchanged:
        return [], ""
    edits = line_edits(masked, result.source)
    real = source.splitlines(keepends=True)
    fake = masked.splitlines(keepends=True)
    for e in edits:  # an edit must not swallow a masked magic line
        for n in range(e.line, min(e.end_line + (1 if e.end_col else 0), len(real))):
            if real[n] != fake[n]:
                return [], ""
    return edits, result.diff


def _callee(source: str, finding: Finding) -> str:
    """The name a quick fix gives the step or marker: from what the call means (``read_env``
    for ``os.environ.get``), see ``_meaning.step_name``."""
    if finding.callee:
        return step_name(finding.callee)
    line = source.splitlines()[finding.span.line]
    text = (
        line[finding.span.col : finding.span.end_col]
        if finding.span.line == finding.span.end_line
        else line[finding.span.col :]
    )
    return step_name(text.split("(", 1)[0].strip())


def fix_for(source: str, finding: Finding) -> Action | None:
    """The quick fix of one analysis finding, or None if it has none or the splicer refuses."""
    from letitloop import splice

    try:
        if finding.fix == "wrap_in_step":
            name = _callee(source, finding)
            edits, diff = _spliced(
                source, splice.wrap_in_step, finding.span.line + 1, finding.span.col, name
            )
            title = f"Journal this call: wrap it in step({name!r})"
        elif finding.fix == "wrap_in_marker":
            name = _callee(source, finding)
            edits, diff = _spliced(
                source,
                splice.wrap_in_marker,
                finding.span.line + 1,
                finding.span.end_line + 1,
                name,
            )
            title = f"Run this at most once: wrap it in atomic_marker({name!r})"
        elif finding.fix == "add_durable" and finding.target:
            edits, diff = _spliced(source, splice.add_durable, finding.target)
            title = f"Make {finding.target} @durable"
        else:
            return None
    except splice.SpliceError:
        return None
    if not edits:
        return None
    return Action(title, QUICKFIX, tuple(edits), finding.code, diff)


def refactors(source: str, analysis: Analysis, line: int, col: int, end_line: int) -> list[Action]:
    """Actions offered wherever the cursor is: wrap the call in step(), wrap the selected
    statements in atomic_marker, make the enclosing function @durable (only a function that
    calls step() or does what a durable function must journal: see ``_meaning``)."""
    from letitloop import splice

    actions: list[Action] = []
    inside = function_at(analysis, line)
    if inside is not None and analysis.error is None:
        try:
            edits, diff = _spliced(source, splice.wrap_in_step, line + 1, col)
            if edits:
                actions.append(
                    Action("Wrap this call in step()", REWRITE, tuple(edits), None, diff)
                )
        except splice.SpliceError:
            pass
        try:
            edits, diff = _spliced(source, splice.wrap_in_marker, line + 1, end_line + 1, "effect")
            if edits:
                actions.append(
                    Action("Wrap in atomic_marker('effect')", REWRITE, tuple(edits), None, diff)
                )
        except splice.SpliceError:
            pass
    target = enclosing_def(source, line)
    offer = target is not None and (inside is None or inside.span.line > line)
    if offer and target is not None and does_durable_work(mask_cell(source)[0], target):
        try:
            edits, diff = _spliced(source, splice.add_durable, target)
            if edits:
                actions.append(Action(f"Make {target} @durable", REWRITE, tuple(edits), None, diff))
        except splice.SpliceError:
            pass
    return actions


def proposal_actions(uri: str, path: str, proposals: list[Any]) -> list[Action]:
    """Apply or reject each pending splice proposal that targets this file. Both are commands:
    applying asks the editor to apply the edit (``workspace/applyEdit``, with the diff as
    its preview) and journals the decision only once the editor applied it."""
    actions: list[Action] = []
    for p in proposals:
        if p.path != path or p.state != "pending":
            continue
        why = f": {p.reason}" if p.reason else ""
        apply = ("letitloop.proposal.apply", [p.id, uri])
        reject = ("letitloop.proposal.reject", [p.id])
        title = lens(f"Apply splice proposal {p.id} to {p.target}{why}")  # journal text
        actions.append(Action(title, QUICKFIX, (), None, "", apply))
        title = lens(f"Reject splice proposal {p.id} to {p.target}")
        actions.append(Action(title, QUICKFIX, (), None, "", reject))
    return actions


def proposal_edit(source: str, path: str, proposal: Any) -> tuple[list[LineEdit], str]:
    """The edits that apply ``proposal`` to the editor's text, and its diff.

    Raises ``ProposalConflictError`` if the target is no longer what was proposed against."""
    from letitloop import splice

    try:
        current: str | None = splice.source_of(source, proposal.target)
    except splice.SpliceError:
        current = None
    if current != proposal.old:
        raise splice.ProposalConflictError(
            f"proposal {proposal.id}: {proposal.target} changed since it was proposed",
            fix="merge by hand (lil splice show ID shows both versions), or ask for a new one",
        )
    result = splice.replace(source, proposal.target, proposal.code)
    return line_edits(source, result.source), result.diff_for(path)
