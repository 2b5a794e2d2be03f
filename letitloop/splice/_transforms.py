"""Durable-code transforms an editor offers as code actions, each a minimal text edit.

- ``wrap_in_step``: ``fn(a, b=1)`` -> ``step("fn", fn, a, b=1)`` (``await`` calls become
  ``async_step``);
- ``wrap_in_marker``: whole statements -> a ``with atomic_marker(...)`` block;
- ``add_durable``: ``@durable`` (``@durable_async`` for ``async def``) on a function.

Each adds the ``from letitloop import ...`` it needs (see ``_imports``) and returns a
``SpliceResult`` whose ``changed`` names the enclosing definition (``<module>`` at top level).
Positions are 1-based lines and 0-based columns counted in characters, as libcst reports them.
"""

from __future__ import annotations

import re

import libcst as cst
from libcst.helpers import get_full_name_for_node

from letitloop.splice._errors import SpliceError
from letitloop.splice._imports import letitloop_aliases, letitloop_import
from letitloop.splice._index import Index
from letitloop.splice._ops import edit, finish
from letitloop.splice._result import SpliceResult
from letitloop.splice._text import Edit, indent_lines, string_literal

MODULE = "<module>"
STEP_NAMES = ("step", "async_step")
# Keywords step() keeps for itself: a wrapped call that passes one would change meaning.
STEP_OWN_KEYWORDS = frozenset({"_kind", "retry", "timeout", "validate", "max_validation_attempts"})


def _step_keywords() -> frozenset[str]:
    try:
        from letitloop.kernel import STEP_KEYWORDS
    except ImportError:  # pragma: no cover - older kernels take no step policies
        return STEP_OWN_KEYWORDS
    return STEP_OWN_KEYWORDS | frozenset(STEP_KEYWORDS)


def _enclosing(index: Index, offset: int) -> str:
    """The qualified name of the innermost definition whose body holds ``offset``."""
    inside = [d for d in index.definitions if d.head <= offset < d.end]
    return inside[-1].qualname if inside else MODULE


def wrap_in_step(source: str, line: int, col: int, name: str | None = None) -> SpliceResult:
    """Turn the call at ``line``/``col`` into a journaled step.

    The innermost call whose text contains the position is wrapped: ``fn(a, b=1)`` becomes
    ``step("fn", fn, a, b=1)``, ``client.fetch(url)`` becomes
    ``step("fetch", client.fetch, url)``, and ``await fn(x)`` becomes
    ``await async_step("fn", fn, x)``. ``name`` defaults to the callee's name. Arguments keep
    their layout and comments; a call spread over lines gets one argument a line.
    """
    index = Index(source)
    here = (line, col)
    containing = []
    for call in index.nodes(cst.Call):
        rng = index.range_of(call)
        if (rng.start.line, rng.start.column) <= here <= (rng.end.line, rng.end.column):
            containing.append((rng.start.line, rng.start.column, call))
    if not containing:
        raise SpliceError(
            f"there is no call at line {line}, column {col}",
            fix="put the position on the called function's name or inside the call's "
            "parentheses (lines count from 1, columns from 0)",
        )
    call = max(containing, key=lambda c: (c[0], c[1]))[2]
    awaited = {id(a.expression) for a in index.nodes(cst.Await)}
    callee = get_full_name_for_node(call.func)
    step_names = {alias for n in STEP_NAMES for alias in letitloop_aliases(index, n)}
    if callee is not None and callee.rsplit(".", 1)[-1] in step_names | set(STEP_NAMES):
        raise SpliceError(
            f"the call at line {line} is already a step: {callee}(...)",
            fix="point at the call inside it, or leave it as it is",
        )
    if name is None:
        if isinstance(call.func, cst.Name):
            name = call.func.value
        elif isinstance(call.func, cst.Attribute):
            name = call.func.attr.value
        else:
            raise SpliceError(
                f"the call at line {line} has no plain name to give its step",
                fix="pass name= (CLI and editor: the step name to journal it under)",
            )
    if not name:
        raise SpliceError("a step name cannot be empty", fix="pass a non-empty name=")
    reserved = sorted(
        a.keyword.value for a in call.args if a.keyword and a.keyword.value in _step_keywords()
    )
    if reserved:
        raise SpliceError(
            f"the call passes {', '.join(reserved)}=, which step() would take for itself",
            fix="wrap the call in a lambda or a small function and make that the step",
        )
    helper = "async_step" if id(call) in awaited else "step"
    import_edit, local = letitloop_import(index, helper)
    rng = index.range_of(call)
    start, end = index.offset(rng.start), index.offset(rng.end)
    func_end = index.offset(index.range_of(call.func).end)
    lpar = source.index("(", func_end)
    assert source[end - 1] == ")", source[start:end]
    func_text = source[start:lpar].rstrip()
    inner = source[lpar + 1 : end - 1]
    literal = string_literal(name)
    if not inner.strip():
        text = f"{local}({literal}, {func_text})"
    else:
        space = re.match(r"\s*", inner)
        lead = space.group() if space else ""
        if "\n" in lead or "\r" in lead:
            brk = index.newline + re.split(r"\r\n?|\n", lead)[-1]
            text = f"{local}({brk}{literal},{brk}{func_text},{inner})"
        else:
            text = f"{local}({literal}, {func_text}, {inner.lstrip()})"
    edits = [Edit(start, end, text), *([import_edit] if import_edit else [])]
    return edit(index, edits, "wrap_in_step", (_enclosing(index, start),))


def wrap_in_marker(source: str, start_line: int, end_line: int, name: str) -> SpliceResult:
    """Wrap whole statements in an ``atomic_marker`` block::

        with atomic_marker("name") as should_execute:
            if should_execute:
                ...the statements...

    The statements are those of the innermost block that covers every line of code between
    ``start_line`` and ``end_line`` (1-based, inclusive): a selection that cuts a statement
    is widened to the whole statement. Comment lines selected right above the first statement
    move into the block; the statements are re-indented by two units of the block's
    indentation (multi-line string contents stay as they are).
    """
    if not isinstance(name, str) or not name:
        raise SpliceError("a marker needs a non-empty name", fix='pass name="send_email"')
    if start_line > end_line:
        start_line, end_line = end_line, start_line
    index = Index(source)
    lines = index.lines
    code = [
        n
        for n in range(max(start_line, 1), min(end_line, lines.count) + 1)
        if not lines.blank(n) and not lines.line_text(n).lstrip().startswith("#")
    ]
    if not code:
        raise SpliceError(
            f"lines {start_line}-{end_line} hold no statement",
            fix="select the lines of the statements to run at most once",
        )
    best = None
    for block, depth in index.blocks:
        spans = [index.span(s) for s in block.body]
        chosen = [s for s in spans if s.first_line <= code[-1] and s.end_line >= code[0]]
        if not chosen or chosen[0].first_line > code[0] or chosen[-1].end_line < code[-1]:
            continue
        size = (chosen[-1].end_line - chosen[0].first_line, -depth)
        if best is None or size < best[0]:
            best = (size, block, chosen)
    assert best is not None  # the module's own block covers every line of code
    _, block, chosen = best
    first, last = chosen[0], chosen[-1]
    begin = first.start
    if start_line < first.first_line:  # selected comment lines above it come along
        begin = min(lines.blank_run_after(max(lines.start(start_line), first.outer)), first.start)
    unit = index.unit_of(block if isinstance(block, cst.IndentedBlock) else None)
    first_line = lines.line_of(begin)
    keep = [
        n - first_line + 1 for n, doc in index.string_lines.items() if not doc and n > first_line
    ]
    body = indent_lines(source[begin : last.end], unit * 2, keep, base=first.indent)
    import_edit, local = letitloop_import(index, "atomic_marker")
    if import_edit and begin < import_edit.start < last.end:
        raise SpliceError(
            "the selection holds the module's imports, where the atomic_marker import goes",
            fix="wrap statements inside the durable function, not the module's imports",
        )
    nl, ind = index.newline, first.indent
    header = (
        f"{ind}with {local}({string_literal(name)}) as should_execute:{nl}"
        f"{ind}{unit}if should_execute:{nl}"
    )
    edits = [Edit(begin, last.end, header + body), *([import_edit] if import_edit else [])]
    return edit(index, edits, "wrap_in_marker", (_enclosing(index, first.head),))


def add_durable(source: str, target: str, *, choose: int | None = None) -> SpliceResult:
    """Decorate the function ``target`` with ``@durable`` (``@durable_async`` if it is
    ``async def``), as its innermost decorator, so ``@staticmethod``, ``@classmethod`` and
    framework decorators keep wrapping what they wrapped. A function that already has one is
    returned unchanged (``result.unchanged``)."""
    index = Index(source)
    d = index.resolve(target, choose)
    node = d.node
    if not isinstance(node, cst.FunctionDef):
        raise SpliceError(
            f"{d.qualname} is a class; @durable goes on a function",
            fix="name the function or method to make durable",
            target=d.qualname,
        )
    decorator = "durable_async" if node.asynchronous else "durable"
    known = {"durable", "durable_async"}
    for alias_of in known.copy():
        known |= letitloop_aliases(index, alias_of)
    for existing in node.decorators:
        expr = existing.decorator
        full = get_full_name_for_node(expr.func if isinstance(expr, cst.Call) else expr) or ""
        if full.rsplit(".", 1)[-1] in known:
            return finish(index, source, "add_durable", ())
    import_edit, local = letitloop_import(index, decorator)
    text = f"{d.indent}@{local}{index.newline}"
    edits = [Edit(d.head, d.head, text), *([import_edit] if import_edit else [])]
    return edit(index, edits, "add_durable", (d.qualname,))
