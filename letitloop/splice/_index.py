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
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import libcst as cst
from libcst.metadata import (
    CodeRange,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    WhitespaceInclusivePositionProvider,
)

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
DefNode = cst.FunctionDef | cst.ClassDef
LOCALS = ".<locals>"


def parse(text: str, what: str, fix: str) -> cst.Module:
    """``text`` parsed by libcst, or ``InvalidSourceError`` saying where it fails."""
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise InvalidSourceError(
            f"the {what} is not valid Python (line {exc.raw_line}, column {exc.raw_column + 1}): "
            f"{exc.message}",
            what=what,
            fix=fix,
            line=exc.raw_line,
            column=exc.raw_column + 1,
        ) from None


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Definition(Span):
    """A ``def``, ``async def`` or ``class`` statement, with its place in the scopes."""

    qualname: str = ""
    name: str = ""
    kind: str = "function"  # "function", "async function" or "class"
    scope: Definition | None = None
    block: Block = field(default=None, repr=False)  # type: ignore[assignment]

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
        decos = " ".join("@" + _flat(cst.Module([]).code_for_node(d.decorator)) for d in node.decorators)
        if isinstance(node, cst.FunctionDef):
            params = _flat(cst.Module([]).code_for_node(node.params))
            head = ("async " if node.asynchronous else "") + f"def {self.name}({params})"
        else:
            args = ", ".join(_flat(cst.Module([]).code_for_node(a)).rstrip(", ") for a in node.bases)
            head = f"class {self.name}" + (f"({args})" if args else "")
        return f"{decos} {head}" if decos else head


def _flat(code: str) -> str:
    return " ".join(code.split())


class Index:
    """A parsed source: positions, statement spans, definitions and target resolution."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = LineTable(source)
        module = parse(
            source, "source", "fix the syntax error in the file first; the splicer only edits "
            "files that parse"
        )
        self.wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.module = self.wrapper.module
        self.pos: Any = self.wrapper.resolve(PositionProvider)
        self.wpos: Any = self.wrapper.resolve(WhitespaceInclusivePositionProvider)
        self.parents: Any = self.wrapper.resolve(ParentNodeProvider)
        self.newline = first_newline(source, self.module.default_newline)
        self.definitions: list[Definition] = []
        self._spans: dict[int, Span] = {}
        self._collect(self.module, None)

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
        outer = min(self.offset(self.wpos[node].start), start)
        # The syntactic end excludes a trailing comment; whatever follows it up to the
        # whitespace-inclusive end (the body's footer comments) belongs to the statement,
        # except blank lines at the very end.
        end = lines.start(rng.end.line + 1)
        ws_end = min(self.offset(self.wpos[node].end), len(self.source))
        line = rng.end.line + 1
        while lines.start(line) < ws_end:
            if not lines.blank(line):
                end = lines.start(line + 1)
            line += 1
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
        parent = self.parents[node]
        assert isinstance(parent, (cst.Module, cst.IndentedBlock)), parent
        return parent

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
        parent = self.parents.get(node)
        return self.unit_of(parent if isinstance(parent, cst.IndentedBlock) else None)

    def blocks(self) -> Iterator[tuple[Block, int]]:
        """Every block of statements with its depth, outermost first."""

        def walk(node: cst.CSTNode, depth: int) -> Iterator[tuple[Block, int]]:
            if isinstance(node, (cst.Module, cst.IndentedBlock)):
                yield node, depth
                depth += 1
            for child in node.children:
                if isinstance(child, (cst.BaseCompoundStatement, cst.IndentedBlock)) or isinstance(
                    child, (cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)
                ) or isinstance(child, (cst.If, cst.MatchCase)):
                    yield from walk(child, depth)

        yield from walk(self.module, 0)

    # -- definitions -------------------------------------------------------------------------

    def _collect(self, node: cst.CSTNode, scope: Definition | None) -> None:
        for child in node.children:
            if isinstance(child, (cst.FunctionDef, cst.ClassDef)):
                prefix = scope.prefix if scope else ""
                name = child.name.value
                kind = "class" if isinstance(child, cst.ClassDef) else (
                    "async function" if child.asynchronous else "function"
                )
                d = Definition(
                    **self._span_fields(child),
                    qualname=prefix + name,
                    name=name,
                    kind=kind,
                    scope=scope,
                    block=self.block_of(child),
                )
                self._spans[id(child)] = d
                self.definitions.append(d)
                self._collect(child.body, d)
            elif isinstance(child, cst.BaseSuite | cst.BaseCompoundStatement) or isinstance(
                child, (cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)
            ) or isinstance(child, cst.MatchCase):
                self._collect(child, scope)

    def definition(self, node: cst.CSTNode) -> Definition:
        span = self._spans[id(node)]
        assert isinstance(span, Definition)
        return span

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
        if len(found) > 1:
            if len({d.qualname for d in found}) > 1:
                note = f"{target!r} is short for {len(found)} different definitions"
                raise AmbiguousTargetError(target, candidates, note=note)
            raise AmbiguousTargetError(target, candidates)
        return found[0]

    def suggest(self, target: str) -> list[str]:
        """Names close to ``target``: the same last name under another scope first, then
        spelling neighbours (``difflib.get_close_matches``)."""
        names = sorted({*self.qualnames, *(d.loose for d in self.definitions)})
        last = target.rsplit(".", 1)[-1]
        same_tail = [n for n in sorted(set(self.qualnames)) if n.rsplit(".", 1)[-1] == last]
        lowered = {n.lower(): n for n in names}
        close = [lowered[n] for n in difflib.get_close_matches(target.lower(), lowered, n=3)]
        out: list[str] = []
        for name in [*same_tail, *close]:
            if name not in out and name != target:
                out.append(name)
        return out[:5]

    def children_of(self, scope: Definition | None) -> list[Definition]:
        return [d for d in self.definitions if d.scope is scope]
