"""Where every function and class of a source is, by qualified name, down to the character.

``Index(source)`` parses once with libcst and answers: the spans of statements (with the
comments attached above them, their decorators, and their end), the definitions with their
qualified names, and which one a target names.

Qualified names follow Python's ``__qualname__``: ``func``, ``Class.method``,
``Outer.Inner.method``, and ``outer.<locals>.inner`` for a function defined inside a function.
``outer.inner`` is accepted too when no other definition has that short form. Definitions under
``if``/``try``/``with``/``for``/``match`` take the name of the scope around them, so alternatives
(``try: def f ... except ImportError: def f``) share a name and must be told apart with
``choose=``.
"""

from __future__ import annotations

import difflib
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from letitloop.splice._errors import (
    AmbiguousTargetError,
    Candidate,
    InvalidSourceError,
    TargetNotFoundError,
)
from letitloop.splice._text import LineTable, first_newline

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

Block = cst.Module | cst.IndentedBlock
N = TypeVar("N", bound=cst.CSTNode)
LOCALS = ".<locals>"


def syntax_problem(text: str, exc: cst.ParserSyntaxError) -> tuple[int, int, str]:
    """Line, column (1-based) and message for a parse failure of ``text``.

    CPython's own parser locates errors precisely and explains them ("expected ':'");
    libcst reports the token after the problem. Python's answer is used when it rejects the
    text too, libcst's otherwise (syntax this Python does not know).
    """
    error = compile_error(text)
    if error is not None and error.lineno:
        return error.lineno, error.offset or 1, error.msg
    message = re.sub(r"^(?:parser error: )?error at \d+:\d+: ", "", exc.message)
    return exc.raw_line, exc.raw_column + 1, message


def parse(text: str, what: str, fix: str) -> cst.Module:
    """``text`` parsed by libcst, or ``InvalidSourceError`` saying where it fails."""
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        line, column, message = syntax_problem(text, exc)
        raise InvalidSourceError(
            f"the {what} is not valid Python (line {line}, column {column}): {message}",
            what=what,
            fix=fix,
            line=line,
            column=column,
        ) from None


@dataclass(frozen=True, eq=False)
class Span:
    """Offsets of one statement in the source (each a line start, except ``end`` at EOF).

    ``outer``..``attach``  blank lines and comments that are not attached to it
    ``attach``..``start``  comment lines directly above it (no blank line in between)
    ``start``..``head``    its decorators (empty for undecorated and non-def statements)
    ``head``..``end``      the statement itself, through its last non-blank line (the
                           comments indented inside its body included, trailing blank
                           lines excluded)
    """

    node: cst.CSTNode
    outer: int
    attach: int
    start: int
    head: int
    end: int
    line: int  # line of the keyword (def/class/if...) or of the statement's first token
    first_line: int  # line of the first decorator, else ``line``
    end_line: int
    indent: str  # the whitespace before the keyword on its line


@dataclass(frozen=True, eq=False)
class Definition(Span):
    """A ``def``, ``async def`` or ``class`` statement, with its place in the scopes."""

    qualname: str
    name: str
    kind: str  # "function", "async function" or "class"
    scope: Definition | None = field(repr=False)
    block: Block = field(repr=False)

    @property
    def loose(self) -> str:
        return self.qualname.replace(LOCALS, "")

    @property
    def prefix(self) -> str:
        """What this definition's children's qualified names start with."""
        return self.qualname + (LOCALS + "." if self.kind != "class" else ".")

    @property
    def header(self) -> str:
        """``@decorator def name(params)``: a one-line reminder of which one this is."""
        node = self.node
        assert isinstance(node, (cst.FunctionDef, cst.ClassDef))
        code = cst.Module([]).code_for_node
        decos = " ".join("@" + _flat(code(d.decorator)) for d in node.decorators)
        if isinstance(node, cst.FunctionDef):
            params = _flat(code(node.params))
            head = ("async " if node.asynchronous else "") + f"def {self.name}({params})"
        else:
            args = ", ".join(_flat(code(a)).rstrip(", ") for a in node.bases)
            head = f"class {self.name}" + (f"({args})" if args else "")
        return f"{decos} {head}" if decos else head


def positions(wrapper: MetadataWrapper) -> Any:
    """``PositionProvider``'s map for the wrapper's module.

    ``MetadataWrapper.resolve`` also runs an empty batched visit of the whole tree (libcst
    1.9), which rebuilds every node and costs as much as computing the positions; the
    provider's own ``_gen`` does only the codegen pass. If a libcst release changes that
    internal, the public ``resolve`` is used instead.
    """
    try:
        return PositionProvider()._gen(wrapper)
    except (AttributeError, TypeError):  # pragma: no cover - a libcst without _gen(wrapper)
        return wrapper.resolve(PositionProvider)


def compile_error(text: str) -> SyntaxError | None:
    """The error ``compile()`` raises for ``text`` (which also catches what a parser alone
    accepts: ``return`` outside a function, ``await`` outside ``async def``, duplicate
    parameters), or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<splice>", "exec", dont_inherit=True)
        except SyntaxError as exc:
            return exc
        except ValueError as exc:  # null bytes
            return SyntaxError(str(exc))
    return None


def _flat(code: str) -> str:
    return " ".join(code.split())


def suites(node: cst.CSTNode) -> Iterator[cst.BaseSuite]:
    """The suites of a compound statement, in source order (``try`` body, handlers, ``else``,
    ``finally``; ``if`` body then each ``elif``/``else``; ``match`` cases)."""
    for attr in ("body", "handlers", "cases", "orelse", "finalbody"):
        value = getattr(node, attr, None)
        if isinstance(value, cst.BaseSuite):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from suites(item)
        elif isinstance(value, cst.CSTNode):
            yield from suites(value)


def footer_lines(node: cst.CSTNode) -> int:
    """How many lines of body footers (trailing blank and comment lines that libcst gives to
    an indented block) follow a statement's last token: those of its last suite, and of that
    suite's last statement, and so on inward."""
    total = 0
    while isinstance(node, cst.BaseCompoundStatement):
        last = list(suites(node))[-1]
        if not isinstance(last, cst.IndentedBlock):
            break
        total += len(last.footer)
        node = last.body[-1]
    return total


class Index:
    """A parsed source: positions, statement spans, definitions and target resolution."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = LineTable(source)
        module = parse(
            source,
            "source",
            "fix the syntax error in the file first; the splicer only edits files that parse",
        )
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.module = self.wrapper.module
        self.pos: Any = positions(self.wrapper)
        self.newline = first_newline(source, self.module.default_newline)
        self.definitions: list[Definition] = []
        self.blocks: list[tuple[Block, int]] = []  # every block of statements, with its depth
        self._spans: dict[int, Span] = {}
        self._parent: dict[int, Block] = {}
        self._collect(self.module, None, 0)

    # -- validation --------------------------------------------------------------------------

    @cached_property
    def compiles(self) -> bool:
        """Whether this Python compiles the source (if not, results are only parsed)."""
        return compile_error(self.source) is None

    @cached_property
    def string_lines(self) -> dict[int, bool]:
        """Lines that begin inside a multi-line string literal -> whether it is a docstring."""
        from letitloop.splice._indent import string_lines

        return string_lines(self.module, self.pos)

    def nodes(self, kind: type[N]) -> list[N]:
        """Every node of a type, from the position map (no tree walk needed)."""
        return [n for n in self.pos if isinstance(n, kind)]

    def check(self, result: str, kind: str, target: str | None = None) -> None:
        """Raise ``InvalidSourceError`` unless ``result`` is valid Python: a splice never
        returns code that Python would reject. It is compiled when the original compiles
        (CPython's own parser and compiler, which also reject ``await`` outside ``async def``
        and the like), else parsed with libcst (a file in a newer Python's syntax)."""
        fix = (
            "check that the new code fits where it goes (indentation, a method's self, await "
            "only inside async def); nothing was changed"
        )
        if self.compiles:
            error = compile_error(result)
            if error is not None:
                raise InvalidSourceError(
                    f"the {kind} would produce code Python rejects (line {error.lineno}): "
                    f"{error.msg}",
                    what="result",
                    fix=fix,
                    line=error.lineno,
                    column=error.offset,
                    target=target,
                )
            return
        try:
            cst.parse_module(result)
        except cst.ParserSyntaxError as exc:
            line, column, message = syntax_problem(result, exc)
            raise InvalidSourceError(
                f"the {kind} would produce invalid Python (line {line}, column {column}): "
                f"{message}",
                what="result",
                fix=fix,
                line=line,
                column=column,
                target=target,
            ) from None

    # -- offsets -----------------------------------------------------------------------------

    def offset(self, position: Any) -> int:
        return self.lines.offset(position.line, position.column)

    def range_of(self, node: cst.CSTNode) -> CodeRange:
        return self.pos[node]  # type: ignore[no-any-return]

    def span(self, node: cst.CSTNode) -> Span:
        """The span of a statement (see ``Span``)."""
        cached = self._spans.get(id(node))
        if cached is None:
            cached = self._spans[id(node)] = Span(**self._span_fields(node))
        return cached

    def _span_fields(self, node: cst.CSTNode) -> dict[str, Any]:
        lines, rng = self.lines, self.pos[node]
        decorators = getattr(node, "decorators", ())
        first_line = self.pos[decorators[0]].start.line if decorators else rng.start.line
        leading = list(getattr(node, "leading_lines", ()))
        attached = 0
        while attached < len(leading) and leading[len(leading) - 1 - attached].comment:
            attached += 1
        start = lines.start(first_line)
        # Every EmptyLine of leading_lines is one physical line right above the statement.
        outer = lines.start(first_line - len(leading))
        # The syntactic end excludes a trailing comment; the lines of body footers that follow
        # it (comments indented inside the body) belong to the statement too, except blank
        # lines at the very end.
        end = lines.start(rng.end.line + 1)
        for line in range(rng.end.line + 1, rng.end.line + 1 + footer_lines(node)):
            if not lines.blank(line):
                end = lines.start(line + 1)
        end = min(end, len(self.source))
        return {
            "node": node,
            "outer": outer,
            "attach": lines.start(first_line - attached),
            "start": start,
            "head": lines.start(rng.start.line),
            "end": end,
            "line": rng.start.line,
            "first_line": first_line,
            "end_line": lines.line_of(max(end - 1, start)),
            "indent": self.source[lines.start(rng.start.line) : self.offset(rng.start)],
        }

    # -- blocks ------------------------------------------------------------------------------

    def block_of(self, node: cst.CSTNode) -> Block:
        """The block (module or indented block) whose statement ``node`` is."""
        return self._parent[id(node)]

    def siblings(self, node: cst.CSTNode) -> tuple[Sequence[cst.CSTNode], int]:
        """The statements of the block holding ``node``, and its index among them."""
        body = self.block_of(node).body
        return body, next(i for i, s in enumerate(body) if s is node)

    def unit_of(self, block: Block | None) -> str:
        """The indentation a block adds (the file's default when the block has none)."""
        if isinstance(block, cst.IndentedBlock) and block.indent is not None:
            return block.indent
        return self.module.default_indent

    def body_unit(self, node: cst.CSTNode) -> str:
        """The indentation unit to use for code that lives at ``node``'s depth."""
        body = getattr(node, "body", None)
        if isinstance(body, cst.IndentedBlock):
            return self.unit_of(body)
        parent = self._parent.get(id(node))
        return self.unit_of(parent if isinstance(parent, cst.IndentedBlock) else None)

    # -- definitions -------------------------------------------------------------------------

    def _collect(self, block: Block, scope: Definition | None, depth: int) -> None:
        self.blocks.append((block, depth))
        for stmt in block.body:
            self._parent[id(stmt)] = block
            inner = scope
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                name = stmt.name.value
                if isinstance(stmt, cst.ClassDef):
                    kind = "class"
                else:
                    kind = "async function" if stmt.asynchronous else "function"
                inner = Definition(
                    **self._span_fields(stmt),
                    qualname=(scope.prefix if scope else "") + name,
                    name=name,
                    kind=kind,
                    scope=scope,
                    block=block,
                )
                self._spans[id(stmt)] = inner
                self.definitions.append(inner)
            if isinstance(stmt, cst.BaseCompoundStatement):
                for suite in suites(stmt):
                    if isinstance(suite, cst.IndentedBlock):
                        self._collect(suite, inner, depth + 1)

    @cached_property
    def qualnames(self) -> list[str]:
        return [d.qualname for d in self.definitions]

    def resolve(self, target: str, choose: int | None = None) -> Definition:
        """The definition ``target`` names; ``choose`` (a 1-based number or a line number)
        picks one when several share the name."""
        target = target.strip()
        found = [d for d in self.definitions if d.qualname == target]
        if not found and LOCALS not in target:
            found = [d for d in self.definitions if d.loose == target]
        if not found:
            raise TargetNotFoundError(
                target, self.suggest(target), defined=sorted(set(self.qualnames))
            )
        if choose is None and len(found) == 1:
            return found[0]
        candidates = [
            Candidate(i, d.qualname, d.line, d.first_line, d.end_line, d.header)
            for i, d in enumerate(found, start=1)
        ]
        if choose is not None:
            if 1 <= choose <= len(found):
                return found[choose - 1]
            for d in found:
                if d.first_line <= choose <= d.end_line:
                    return d
            raise AmbiguousTargetError(
                target,
                candidates,
                note=f"choose={choose} is neither a number from 1 to {len(found)} nor a line "
                f"inside one of the definitions named {target!r}",
            )
        if len({d.qualname for d in found}) > 1:
            note = f"{target!r} is short for {len(found)} different definitions"
            raise AmbiguousTargetError(target, candidates, note=note)
        raise AmbiguousTargetError(target, candidates)

    def suggest(self, target: str) -> list[str]:
        """Names close to ``target``: the same last name under another scope first, then
        spelling neighbours (``difflib.get_close_matches``)."""
        forms = {d.qualname.lower(): d.qualname for d in self.definitions}
        forms.update(
            {d.loose.lower(): d.qualname for d in self.definitions if d.loose != d.qualname}
        )
        last = target.rsplit(".", 1)[-1]
        same_tail = [n for n in sorted(set(self.qualnames)) if n.rsplit(".", 1)[-1] == last]
        close = [forms[n] for n in difflib.get_close_matches(target.lower(), forms, n=4)]
        out: list[str] = []
        for name in [*same_tail, *close]:
            if name not in out and name != target:
                out.append(name)
        return out[:5]
