"""replace, insert and delete one definition by qualified name; list and show definitions.

Each operation finds character offsets with libcst and edits the original text: every byte
outside the edited span stays exactly as it was (comments, blank lines, CRLF line endings,
tabs, encoding declarations, license headers). The result is parsed again, and compiled when
the original compiled, before it is returned; an invalid result raises ``InvalidSourceError``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection
from typing import Any

import libcst as cst

from letitloop.splice._errors import DefinitionRenamedError, SpliceError
from letitloop.splice._indent import Fitted, fit_code
from letitloop.splice._index import Definition, Index
from letitloop.splice._result import SpliceResult, Target
from letitloop.splice._signature import POLICIES, check, find_def
from letitloop.splice._text import (
    Edit,
    LineTable,
    apply_edits,
    ends_with_newline,
    is_blank,
    leading_ws,
    split_lines,
    unified_diff,
)

_FIX_ONE_DEF = (
    "pass the source of exactly one def, async def or class (decorators and comments above it "
    "are fine); to add more definitions, use insert"
)


def finish(index: Index, source: str, kind: str, changed: tuple[str, ...]) -> SpliceResult:
    """Check ``source`` and wrap it up as a result."""
    if source != index.source:
        index.check(source, kind, changed[0] if changed else None)
    return SpliceResult(source, changed, kind, unified_diff(index.source, source), index.source)


def edit(index: Index, edits: list[Edit], kind: str, changed: tuple[str, ...]) -> SpliceResult:
    return finish(index, apply_edits(index.source, edits), kind, changed)


def _eof_text(index: Index, at: int, text: str) -> str:
    """``text`` without its final line ending if it goes at the end of a file that has none."""
    if at == len(index.source) and index.source and not ends_with_newline(index.source):
        return text.removesuffix(index.newline)
    return text


def _has_comment(lines: list[str]) -> bool:
    return any(line.lstrip().startswith("#") for line in lines)


def replace(
    source: str,
    target: str,
    new_code: str,
    *,
    protect: Collection[str] = (),
    policy: str | None = None,
    choose: int | None = None,
    rename: bool = True,
) -> SpliceResult:
    """Replace the function, method or class named ``target`` with ``new_code``.

    ``target`` is a qualified name (``func``, ``Class.method``, ``Outer.Inner.method``,
    ``outer.<locals>.inner``; ``outer.inner`` when unambiguous). ``new_code`` is the complete
    new definition, at any indentation: it is re-indented to the target's depth and takes the
    file's indentation unit and line endings.

    Comments and decorators: the target's leading comments (the comment lines directly above
    its first decorator or ``def``, with no blank line in between) are kept unless the new code
    starts with comment lines of its own, which then replace them; the target's decorators are
    kept unless the new code has decorators, which then replace them all. Blank lines and
    comments separated from the target by a blank line are never touched. At the top of a file,
    the comments before the first statement are the file's header (shebang, encoding, license)
    and never belong to a definition: new leading comments go below them, unless the same lines
    are already there. (To remove every decorator, ``delete`` then ``insert``.) Comment lines
    that trail the target's body (at its body's indentation, after its last statement) are
    kept too, unless the new code ends with trailing comments of its own, which replace them.

    ``protect`` names definitions (the target or ones inside it) whose signature must not
    change; ``policy="additive"`` lets the target's signatures only gain parameters with
    defaults, ``*args`` or ``**kwargs``. ``choose`` (a 1-based number, or a line inside the
    definition) picks one of several definitions sharing the name. New code with another
    name renames the definition (``changed`` lists both names); ``rename=False`` refuses that
    with ``DefinitionRenamedError``.

    Raises ``TargetNotFoundError``, ``AmbiguousTargetError``, ``InvalidSourceError``,
    ``SignatureChangedError``, ``DefinitionRenamedError`` or ``SpliceError``; ``source`` is
    never modified.
    """
    if policy not in POLICIES:
        raise SpliceError(
            f"unknown signature policy {policy!r}", fix="use policy=None or policy='additive'"
        )
    protected = (protect,) if isinstance(protect, str) else tuple(protect)
    index = Index(source)
    d = index.resolve(target, choose)
    fitted = fit_code(
        new_code, indent=d.indent, unit=index.body_unit(d.node), newline=index.newline
    )
    node = _single_definition(fitted, d)
    first, head = fitted.first_line(node), fitted.line_of(node)
    lead = source[d.attach : d.start]
    if _has_comment(fitted.lines[: first - 1]):
        lead = fitted.text(1, first)
        if d.attach == d.start and source[: d.start].endswith(lead):
            lead = ""  # already right above it, in the file's header: not repeated
    decorators = fitted.text(first, head) if node.decorators else source[d.start : d.head]
    body = fitted.text(head)
    if not _trailing_comments(
        split_lines(body), _body_indent(lambda n: fitted.lines[n - 1], fitted.pos, node)
    ):
        body += _old_trailing_comments(index, d)
    text = _eof_text(index, d.end, lead + decorators + body)
    new_source = source[: d.attach] + text + source[d.end :]
    new_name = (d.scope.prefix if d.scope else "") + node.name.value
    if new_name != d.qualname and not rename:
        raise DefinitionRenamedError(d.qualname, new_name)
    changed = (d.qualname,) if new_name == d.qualname else (d.qualname, new_name)
    result = finish(index, new_source, "replace", changed)
    if protected or policy is not None:
        new_line = LineTable(new_source).line_of(d.attach + len(lead) + len(decorators))
        try:
            old_def = find_def(ast.parse(source), d.line)
            new_def = find_def(ast.parse(new_source), new_line)
        except SyntaxError as exc:
            raise SpliceError(
                f"signature policies need a file this Python can parse: {exc.msg}",
                fix="run with the Python version the file is written for, or drop protect=/policy=",
                target=d.qualname,
            ) from None
        check(old_def, new_def, qualname=d.qualname, protect=protected, policy=policy)
    return result


def _body_indent(line_text: Callable[[int], str], pos: Any, node: cst.CSTNode) -> str | None:
    """The indentation of a definition's body (that of its first statement), or None for a
    body on the ``def`` line."""
    body = getattr(node, "body", None)
    if not isinstance(body, cst.IndentedBlock):
        return None
    return leading_ws(line_text(pos[body.body[0]].start.line))


def _trailing_comments(lines: list[str], indent: str | None) -> str:
    """The comment lines (and the blank lines among and before them) that end ``lines`` at
    exactly ``indent``: the comments that trail a definition's body, after its last
    statement."""
    if indent is None:
        return ""
    n = len(lines)
    while n and (is_blank(lines[n - 1]) or _comment_at(lines[n - 1], indent)):
        n -= 1
    tail = lines[n:]
    if not any(_comment_at(line, indent) for line in tail):
        return ""
    return "".join(tail)


def _comment_at(line: str, indent: str) -> bool:
    return leading_ws(line) == indent and line[len(indent) :].startswith("#")


def _old_trailing_comments(index: Index, d: Definition) -> str:
    """The comments trailing ``d``'s body in the file (see ``_trailing_comments``): kept by a
    replacement that brings none of its own, since they are part of the body's text (notes on
    the last branch, disabled code) that code copied from an AST or a debugger leaves out."""
    last = index.range_of(d.node).end.line
    after_code = split_lines(index.source[index.lines.start(last + 1) : d.end])
    return _trailing_comments(after_code, _body_indent(index.lines.line_text, index.pos, d.node))


def _single_definition(fitted: Fitted, d: Definition) -> cst.FunctionDef | cst.ClassDef:
    body = fitted.module.body
    if len(body) != 1 or not isinstance(body[0], (cst.FunctionDef, cst.ClassDef)):
        kinds = ", ".join(type(s).__name__ for s in body)
        raise SpliceError(
            f"the new code for {d.qualname} must be one function or class definition, but it "
            f"holds {len(body)} statement(s) ({kinds})",
            fix=_FIX_ONE_DEF,
            target=d.qualname,
        )
    node = body[0]
    if isinstance(node, cst.ClassDef) != (d.kind == "class"):
        new_kind = "a class" if isinstance(node, cst.ClassDef) else "a function"
        raise SpliceError(
            f"{d.qualname} is a {d.kind}, but the new code defines {new_kind}",
            fix="replace a function with a function and a class with a class; to change one "
            "into the other, delete it and insert the new definition",
            target=d.qualname,
        )
    return node


def _gap(index: Index, node: cst.CSTNode) -> int:
    """How many blank lines separate definitions around ``node`` (PEP 8 if it is alone)."""
    body, i = index.siblings(node)
    gaps = []
    if i > 0:
        gaps.append(index.lines.gap_before(index.span(node).attach))
    if i + 1 < len(body):
        gaps.append(index.lines.gap_before(index.span(body[i + 1]).attach))
    if gaps:
        return max(gaps)
    return 2 if isinstance(index.block_of(node), cst.Module) else 1


def _defined(fitted: Fitted, prefix: str) -> tuple[str, ...]:
    return tuple(
        prefix + s.name.value
        for s in fitted.module.body
        if isinstance(s, (cst.FunctionDef, cst.ClassDef))
    )


def insert(
    source: str,
    new_code: str,
    *,
    after: str | None = None,
    before: str | None = None,
    into: str | None = None,
    choose: int | None = None,
) -> SpliceResult:
    """Insert ``new_code`` (one or more statements, usually a definition) next to a definition.

    - ``after="Class.method"``: right after it, at its depth;
    - ``before="func"``: right before it (above its leading comments and decorators);
    - ``into="Class"``: at the end of the class body (replacing a lone ``pass`` or ``...``);
    - none of them: at the end of the module.

    The new code is separated by as many blank lines as its neighbours are (two at module
    level and one in a class when there is nothing to go by). ``choose`` disambiguates the
    anchor as in ``replace``.
    """
    anchors = [a for a in (after, before, into) if a is not None]
    if len(anchors) > 1:
        raise SpliceError(
            "insert takes at most one of after=, before= and into=",
            fix="name one anchor (or none, to append at the end of the module)",
        )
    index = Index(source)
    nl = index.newline
    if into is not None:
        return _insert_into(index, index.resolve(into, choose), new_code)
    if not anchors:
        body = index.module.body
        fitted = fit_code(new_code, indent="", unit=index.module.default_indent, newline=nl)
        at = index.span(body[-1]).end if body else len(source)
        text = (nl * 2 if body else "") + fitted.text()
        if at == len(source) and source and not ends_with_newline(source):
            text = nl + text.removesuffix(nl)
        elif not body and source and not ends_with_newline(source):
            text = nl + text
        return edit(index, [Edit(at, at, text)], "insert", _defined(fitted, ""))
    d = index.resolve(anchors[0], choose)
    fitted = fit_code(new_code, indent=d.indent, unit=index.body_unit(d.node), newline=nl)
    gap = nl * _gap(index, d.node)
    prefix = d.scope.prefix if d.scope else ""
    if after is not None:
        text = gap + fitted.text()
        if d.end == len(source) and not ends_with_newline(source):
            text = nl + text.removesuffix(nl)
        return edit(index, [Edit(d.end, d.end, text)], "insert", _defined(fitted, prefix))
    return edit(
        index, [Edit(d.attach, d.attach, fitted.text() + gap)], "insert", _defined(fitted, prefix)
    )


def _trivial(stmt: cst.CSTNode) -> bool:
    """A lone ``pass`` or ``...`` with no comment."""
    if isinstance(stmt, cst.SimpleStatementLine):
        if stmt.leading_lines or stmt.trailing_whitespace.comment:
            return False
        small = stmt.body
    elif isinstance(stmt, cst.SimpleStatementSuite):
        small = stmt.body
    else:
        return False
    return len(small) == 1 and (
        isinstance(small[0], cst.Pass)
        or (isinstance(small[0], cst.Expr) and isinstance(small[0].value, cst.Ellipsis))
    )


def _insert_into(index: Index, d: Definition, new_code: str) -> SpliceResult:
    source, nl = index.source, index.newline
    node = d.node
    if not isinstance(node, cst.ClassDef):
        raise SpliceError(
            f"insert(into=...) takes a class, and {d.qualname} is a {d.kind}",
            fix="use after= or before= a definition inside it, or into= its class",
            target=d.qualname,
        )
    body = node.body
    if isinstance(body, cst.SimpleStatementSuite):
        if not _trivial(body):
            raise SpliceError(
                f"class {d.qualname} has its body on the class line",
                fix="put the class body on its own lines first",
                target=d.qualname,
            )
        start = source.rindex(":", 0, index.offset(index.range_of(body.body[0]).start)) + 1
        end = index.lines.start(index.range_of(node).end.line + 1)
        unit = index.module.default_indent
        fitted = fit_code(new_code, indent=d.indent + unit, unit=unit, newline=nl)
        comment = body.trailing_whitespace.comment
        text = ("  " + comment.value if comment else "") + nl + fitted.text()
        changed = _defined(fitted, d.prefix) or (d.qualname,)
        return edit(index, [Edit(start, end, _eof_text(index, end, text))], "insert", changed)
    assert isinstance(body, cst.IndentedBlock)
    stmts = body.body
    last = index.span(stmts[-1])
    unit = index.unit_of(body)
    fitted = fit_code(new_code, indent=index.span(stmts[0]).indent, unit=unit, newline=nl)
    changed = _defined(fitted, d.prefix) or (d.qualname,)
    if len(stmts) == 1 and _trivial(stmts[0]):
        text = _eof_text(index, last.end, fitted.text())
        return edit(index, [Edit(last.start, last.end, text)], "insert", changed)
    gap = index.lines.gap_before(last.attach) if len(stmts) > 1 else 1
    if changed != (d.qualname,) and not isinstance(stmts[-1], (cst.FunctionDef, cst.ClassDef)):
        gap = max(gap, 1)
    text = nl * gap + fitted.text()
    if last.end == len(source) and not ends_with_newline(source):
        text = nl + text.removesuffix(nl)
    return edit(index, [Edit(last.end, last.end, text)], "insert", changed)


def delete(source: str, target: str, *, choose: int | None = None) -> SpliceResult:
    """Delete the definition named ``target``, with its leading comments and decorators.

    The blank lines that separated it from the next definition go with it (or, if it was the
    last in its block, those before it), so the spacing around stays as it was. A definition
    that is alone in its block is replaced by ``pass``.
    """
    index = Index(source)
    d = index.resolve(target, choose)
    body, i = index.siblings(d.node)
    start, end = d.attach, d.end
    if isinstance(d.block, cst.IndentedBlock) and len(body) == 1:
        text = _eof_text(index, end, d.indent + "pass" + index.newline)
        return edit(index, [Edit(start, end, text)], "delete", (d.qualname,))
    if i + 1 < len(body):
        end = index.lines.blank_run_after(end)
    else:
        start = index.lines.blank_run_before(start)
        if end == len(source) and not ends_with_newline(source):
            while start > 0 and source[start - 1] in "\r\n":
                start -= 1  # the file ended without a line ending; keep it that way
    return edit(index, [Edit(start, end, "")], "delete", (d.qualname,))


def list_targets(source: str) -> tuple[Target, ...]:
    """Every function, method and class in ``source``, in source order, with the qualified
    name that ``replace``/``insert``/``delete`` take (and ``choose`` when names repeat)."""
    index = Index(source)
    counts: dict[str, int] = {}
    for d in index.definitions:
        counts[d.qualname] = counts.get(d.qualname, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for d in index.definitions:
        seen[d.qualname] = seen.get(d.qualname, 0) + 1
        choose = seen[d.qualname] if counts[d.qualname] > 1 else None
        out.append(Target(d.qualname, d.kind, d.line, d.first_line, d.end_line, choose))
    return tuple(out)


def source_of(source: str, target: str, *, choose: int | None = None) -> str:
    """The text of the definition named ``target``: its leading comments, decorators and body,
    exactly as in the file (at its indentation). ``replace(source, target, source_of(...))``
    returns ``source`` unchanged."""
    index = Index(source)
    d = index.resolve(target, choose)
    return source[d.attach : d.end]
