"""Fitting new code to the place it goes: its depth, the file's indentation unit and newlines.

New code may arrive at any depth (flush left, or copied from a method at 8 spaces), with its own
indentation unit and line endings. ``fit_code`` re-indents it line by line:

- the base indentation (that of its first line of code) becomes the target's indentation;
- within it, each leading run of the new code's own unit becomes the file's unit (4 spaces to a
  tab and back), so a tab-indented file stays tab-indented;
- every line ending becomes the file's (CRLF stays CRLF);
- lines that begin inside a multi-line string literal are left exactly as given, because their
  leading whitespace is part of the string's value. Docstrings are the exception: they are
  re-indented with the code, as people expect when they move a function;
- empty lines, and lines indented less than the base (a flush-left comment inside a method),
  are left as they are; whitespace-only lines are re-indented like code.

Code that is already at the target's depth in the file's style comes out unchanged, which is
what makes replacing a definition with its own source a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper

from letitloop.splice._errors import InvalidSourceError
from letitloop.splice._index import positions, syntax_problem
from letitloop.splice._text import INDENT_CHARS, NEWLINE_RE, is_blank, leading_ws

_STRINGS: tuple[type[cst.CSTNode], ...] = (cst.SimpleString, cst.FormattedString)
if hasattr(cst, "TemplatedString"):  # t-strings, in libcst releases that parse them
    _STRINGS += (cst.TemplatedString,)


def _docstrings(body: Any, found: set[int]) -> None:
    """Add the string nodes of ``body``'s docstring (if it has one) to ``found``."""
    stmts = body.body if isinstance(body, (cst.Module, cst.IndentedBlock)) else ()
    if not stmts or not isinstance(stmts[0], cst.SimpleStatementLine):
        return
    small = stmts[0].body
    if not small or not isinstance(small[0], cst.Expr):
        return
    stack: list[cst.BaseExpression] = [small[0].value]
    while stack:
        part = stack.pop()
        if isinstance(part, cst.ConcatenatedString):
            stack += [part.left, part.right]
        elif isinstance(part, cst.SimpleString):
            found.add(id(part))


def string_lines(module: cst.Module, positions: Any) -> dict[int, bool]:
    """Lines (1-based) that begin inside a multi-line string literal, mapped to whether that
    literal is a docstring (of the module, a class or a function). ``positions`` is the
    module's ``PositionProvider`` map, which holds every node: no tree walk is needed."""
    docstrings: set[int] = set()
    _docstrings(module, docstrings)
    for node in positions:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            _docstrings(node.body, docstrings)
    lines: dict[int, bool] = {}
    for node, rng in positions.items():
        if isinstance(node, _STRINGS) and rng.end.line > rng.start.line:
            for line in range(rng.start.line + 1, rng.end.line + 1):
                lines[line] = lines.get(line, True) and id(node) in docstrings
    return lines


@dataclass(frozen=True)
class Fitted:
    """New code fitted to its destination.

    ``lines`` are the fitted lines without line endings; ``module`` is the new code parsed
    (flush left) and ``pos`` its positions, whose line numbers are the indices into ``lines``
    (plus one).
    """

    lines: list[str]
    newline: str
    module: cst.Module
    pos: Any

    def text(self, first: int = 1, stop: int | None = None) -> str:
        """Lines ``first`` to ``stop - 1`` (1-based), each with the file's line ending."""
        chosen = self.lines[first - 1 : None if stop is None else stop - 1]
        return "".join(line + self.newline for line in chosen)

    def line_of(self, node: cst.CSTNode) -> int:
        return self.pos[node].start.line  # type: ignore[no-any-return]

    def first_line(self, node: cst.CSTNode) -> int:
        """The line of a statement's first decorator, or of its first token."""
        decorators = getattr(node, "decorators", ())
        return self.line_of(decorators[0] if decorators else node)


def fit_code(code: str, *, indent: str, unit: str, newline: str) -> Fitted:
    """``code`` re-indented to ``indent`` with ``unit`` and ``newline`` (see the module doc).

    Raises ``InvalidSourceError`` if the code is empty or does not parse.
    """
    raw = NEWLINE_RE.split(code.removeprefix("\ufeff"))
    skipped = 0
    while raw and is_blank(raw[0]):
        raw.pop(0)
        skipped += 1
    while raw and is_blank(raw[-1]):
        raw.pop()
    if not raw:
        raise InvalidSourceError(
            "the new code is empty",
            what="new code",
            fix="pass the complete source of the function or class to splice in",
        )
    code_lines = [line for line in raw if not line.lstrip(INDENT_CHARS).startswith("#")]
    base = leading_ws(code_lines[0] if code_lines else raw[0])
    flush = [line[len(base) :] if line.startswith(base) else line for line in raw]
    text = "\n".join(flush) + "\n"
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        bad_line, column, message = syntax_problem(text, exc)
        raise InvalidSourceError(
            f"the new code is not valid Python (its line {bad_line + skipped}, column {column}): "
            f"{message}",
            what="new code",
            fix="pass a complete, consistently indented definition (libcst must parse it "
            "on its own, flush left or indented as a whole)",
            line=bad_line + skipped,
            column=column,
        ) from None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    pos = positions(wrapper)
    strings = string_lines(wrapper.module, pos)
    own_unit = module.default_indent
    out: list[str] = []
    for n, (line, rel) in enumerate(zip(raw, flush, strict=True), start=1):
        if strings.get(n) is False or not line or not line.startswith(base):
            out.append(line)
        else:
            ws = leading_ws(rel)
            out.append(indent + _convert(ws, own_unit, unit) + rel[len(ws) :])
    return Fitted(out, newline, wrapper.module, pos)


def _convert(ws: str, own: str, unit: str) -> str:
    """Leading whitespace with each leading ``own`` unit replaced by ``unit``."""
    if own == unit or not own:
        return ws
    k = 0
    while ws.startswith(own, k * len(own)):
        k += 1
    return unit * k + ws[k * len(own) :]
