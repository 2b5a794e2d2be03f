"""Making a letitloop name importable in a module: ``from letitloop import step``.

``letitloop_import(index, "step")`` returns the edit to make (or ``None`` when the name is
already imported) and the local name to call it by (an existing ``import ... as`` alias wins):

- a ``from letitloop import ...`` already there: the name joins it, in alphabetical position if
  its names are sorted (else at the end), following its layout (one line, or one name a line
  in parentheses, with or without a trailing comma);
- otherwise a new ``from letitloop import step`` line goes after the module's leading imports
  (after its docstring and ``from __future__`` imports), or at the top, after the header
  comments (shebang, encoding declaration, license).

A top-level import or definition that binds the same name to something else is an error: the
splicer will not shadow it.
"""

from __future__ import annotations

from bisect import bisect_left

import libcst as cst
from libcst.helpers import get_full_name_for_node

from letitloop.splice._errors import SpliceError
from letitloop.splice._index import Index
from letitloop.splice._text import Edit, ends_with_newline, leading_ws

PACKAGE = "letitloop"


def _from_letitloop(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.ImportFrom)
        and not node.relative
        and node.module is not None
        and get_full_name_for_node(node.module) == PACKAGE
    )


def _import_lines(module: cst.Module) -> list[cst.SimpleStatementLine]:
    return [
        s
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
        and all(isinstance(small, (cst.Import, cst.ImportFrom)) for small in s.body)
    ]


def letitloop_aliases(index: Index, name: str) -> set[str]:
    """The local names under which ``letitloop.<name>`` is imported at module level."""
    out = set()
    for line in _import_lines(index.module):
        for small in line.body:
            if not isinstance(small, cst.ImportFrom) or not _from_letitloop(small):
                continue
            if isinstance(small.names, cst.ImportStar):
                out.add(name)
                continue
            for alias in small.names:
                if get_full_name_for_node(alias.name) == name:
                    out.add(alias.evaluated_alias or name)
    return out


def letitloop_import(index: Index, name: str) -> tuple[Edit | None, str]:
    """The edit that imports ``letitloop.<name>`` (``None`` if it is imported already) and the
    local name to use."""
    merge_into: cst.ImportFrom | None = None
    for stmt in index.module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and stmt.name.value == name:
            _conflict(index, stmt, name, "is defined in this module")
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and _from_letitloop(small):
                if isinstance(small.names, cst.ImportStar):
                    return None, name
                for alias in small.names:
                    if get_full_name_for_node(alias.name) == name:
                        return None, alias.evaluated_alias or name
                merge_into = merge_into or small
            elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(
                small.names, cst.ImportStar
            ):
                for alias in small.names:
                    bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
                    if bound == name:
                        _conflict(index, small, name, "is imported from elsewhere")
    if merge_into is not None:
        return _merge(index, merge_into, name), name
    return _new_line(index, name), name


def _conflict(index: Index, node: cst.CSTNode, name: str, what: str) -> None:
    line = index.range_of(node).start.line
    raise SpliceError(
        f"{name!r} {what} (line {line}), so letitloop's {name} cannot be imported under that name",
        fix=f"rename the other {name!r}, or import letitloop's under another name "
        f"(`from letitloop import {name} as lil_{name}`) and edit by hand",
    )


def _merge(index: Index, node: cst.ImportFrom, name: str) -> Edit:
    source, nl = index.source, index.newline
    aliases = list(node.names)  # type: ignore[arg-type]
    assert aliases and not isinstance(node.names, cst.ImportStar)
    spans = [
        (index.offset(index.range_of(a).start), index.offset(index.range_of(a).end))
        for a in aliases
    ]
    lines = [index.range_of(a).start.line for a in aliases]
    multiline = lines[-1] != index.range_of(node).start.line or len(set(lines)) > 1
    indent = leading_ws(index.lines.line_text(lines[-1]))
    sep = "," + (nl + indent if multiline else " ")
    existing = [get_full_name_for_node(a.name) or "" for a in aliases]
    where = bisect_left(existing, name) if existing == sorted(existing) else len(existing)
    if where < len(aliases):
        return Edit(spans[where][0], spans[where][0], name + sep)
    last = aliases[-1]
    if isinstance(last.comma, cst.Comma):  # a trailing comma: the new name gets one too
        comma = source.index(",", spans[-1][1]) + 1
        return Edit(comma, comma, sep[1:] + name + ",")
    return Edit(spans[-1][1], spans[-1][1], sep + name)


def _new_line(index: Index, name: str) -> Edit:
    source, nl, body = index.source, index.newline, list(index.module.body)
    line = f"from {PACKAGE} import {name}"
    imports = _import_lines(index.module)
    leading = 1 if body and _is_docstring(body[0]) else 0
    last_import = None
    for stmt in body[leading:]:
        if not any(stmt is i for i in imports):
            break
        last_import = stmt
    if last_import is not None or leading:
        anchor = index.span(last_import or body[0])
        text = line + nl if last_import is not None else nl + line + nl
        if anchor.end == len(source) and not ends_with_newline(source):
            text = nl + text.removesuffix(nl)
        return Edit(anchor.end, anchor.end, text)
    if body:
        first = index.span(body[0])
        blank = 2 if isinstance(body[0], (cst.FunctionDef, cst.ClassDef)) else 1
        return Edit(first.start, first.start, line + nl * (1 + blank))
    tail = nl if source and not ends_with_newline(source) else ""
    return Edit(len(source), len(source), tail + line + nl)


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
