"""Pure analysis of durable code: where the durable functions and their steps are, and what in
them would make a replay take a different path (the rules are in ``_rules``).

No pygls and no journal here: ``analyze(source)`` takes text and returns plain tuples, so it is
unit-tested over ``tests/data/lsp/`` and benchmarked on its own. Each top-level statement is
analysed apart and cached by its text and the imports before it, so an edit re-analyses only
the statements it touched (a 5,000-line file: one parse when opened, milliseconds per edit).
Positions are 0-based lines and code-point columns (``_positions.Span``); the server converts
them to the client's encoding.
"""

from __future__ import annotations

import ast
import gc
import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from letitloop.lsp._positions import Span
from letitloop.lsp._rules import (
    CODES,
    DurableFunction,
    Finding,
    RuleVisitor,
    StepSite,
    mask_cell,
)

__all__ = [
    "CODES",
    "Analysis",
    "DurableFunction",
    "Finding",
    "StepSite",
    "analyze",
    "enclosing_def",
    "function_at",
    "gc_paused",
    "mask_cell",
    "site_at",
]


class Analysis(NamedTuple):
    functions: tuple[DurableFunction, ...]
    sites: tuple[StepSite, ...]
    findings: tuple[Finding, ...]
    error: str | None  # the syntax error that stopped the analysis, if any
    cell: str | None = None  # the name of a ``%%durable`` cell


class _Chunk(NamedTuple):
    """What one top-level statement holds, with lines relative to its first line."""

    functions: tuple[DurableFunction, ...]
    sites: tuple[StepSite, ...]
    findings: tuple[Finding, ...]
    orphans: tuple[tuple[str | None, Finding], ...]
    called: frozenset[str]
    aliases: tuple[tuple[str, str], ...]  # the import aliases after it
    clients: frozenset[str]  # the network-client variables after it


_CHUNKS: OrderedDict[tuple[Any, ...], _Chunk] = OrderedDict()
_CHUNK_CACHE = 20_000
_SEEN: dict[str, None] = {}  # chunk texts analysed lately, oldest first
_CONTINUATIONS = ("else", "elif", "except", "finally", ")", "]", "}")
_TRIPLE = re.compile(r"\"\"\"|'''")


def _split(lines: list[str]) -> list[int]:
    """The first line of each top-level statement (with its decorators). A wrong guess (a line
    at column 0 inside a string or brackets) makes a chunk fail to parse, and the caller then
    parses the whole text."""
    starts: list[int] = []
    quote: str | None = None
    decorated = False
    for n, line in enumerate(lines):
        if quote is None and line[:1] not in ("", " ", "\t", "\n", "\r", "#"):
            if not starts or (not decorated and not line.startswith(_CONTINUATIONS)):
                starts.append(n)
            decorated = line.startswith("@")
        elif quote is None and line.strip() and not line.lstrip().startswith("#"):
            decorated = False
        if '"""' not in line and "'''" not in line:
            continue
        for match in _TRIPLE.finditer(line):
            if quote is None:
                quote = match.group()
            elif quote == match.group():
                quote = None
    return starts


def _shift(span: Span, by: int) -> Span:
    return Span(span.line + by, span.col, span.end_line + by, span.end_col)


def _shift_site(s: StepSite, by: int) -> StepSite:
    return StepSite(
        s.kind, s.name, _shift(s.span, by), _shift(s.name_span, by), s.function, s.straight
    )


def _shift_finding(f: Finding, by: int) -> Finding:
    return f._replace(span=_shift(f.span, by))


def _visit(
    nodes: list[ast.stmt],
    lines: list[str],
    offset: int,
    cell: str | None,
    aliases: tuple[tuple[str, str], ...],
    clients: frozenset[str],
) -> _Chunk:
    visitor = RuleVisitor(lines or [""], cell, offset)
    visitor.aliases.update(aliases)
    visitor.clients.update(clients)
    for node in nodes:
        visitor.visit(node)
    functions = tuple(f._replace(steps=tuple(visitor.steps[f.qualname])) for f in visitor.functions)
    return _Chunk(
        functions,
        tuple(visitor.sites),
        tuple(visitor.findings),
        tuple(visitor.orphans),
        frozenset(visitor.called_in_durable),
        tuple(visitor.aliases.items()),
        frozenset(visitor.clients),
    )


def _remember(key: tuple[Any, ...], chunk: _Chunk) -> _Chunk:
    _CHUNKS[key] = chunk
    if len(_CHUNKS) > _CHUNK_CACHE:
        _CHUNKS.popitem(last=False)
    return chunk


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return int(min([d.lineno for d in decorators] + [node.lineno])) - 1


def _chunks(text: str, cell: str | None) -> list[tuple[int, _Chunk]]:
    """Each top-level statement analysed on its own and cached by its text (and the imports
    before it), so an edit re-analyses only what changed. Whatever is not cached is parsed in
    one ``ast.parse`` of the whole text; if the statements do not line up with the guessed
    chunks, the whole text is one chunk."""
    lines = text.splitlines(keepends=True)
    starts = _split(lines) or [0]
    bounds = [*starts[1:], len(lines)]
    texts = ["".join(lines[a:b]) for a, b in zip(starts, bounds, strict=True)]
    aliases: tuple[tuple[str, str], ...] = ()
    clients: frozenset[str] = frozenset()
    groups = None
    if sum(len(t) for t in texts if t not in _SEEN) * 3 > len(text):
        # mostly new text: one parse of the whole is cheaper than one per statement
        groups = _group(ast.parse(text).body, starts, bounds)
        if groups is None:  # a statement crosses a guessed boundary
            whole = _visit(ast.parse(text).body, text.splitlines(), 0, cell, (), frozenset())
            return [(0, whole)]
    out = []
    for k, (start, end) in enumerate(zip(starts, bounds, strict=True)):
        key = (texts[k], cell, aliases, clients)
        piece = _CHUNKS.get(key)
        if piece is None:
            chunk_lines = [line.rstrip("\r\n") for line in lines[start:end]]
            if groups is not None:
                nodes, offset = groups[k], start
            else:  # a wrong guess fails to parse here, and the caller parses the whole
                nodes, offset = ast.parse(texts[k]).body, 0
            piece = _remember(key, _visit(nodes, chunk_lines, offset, cell, aliases, clients))
            _SEEN[texts[k]] = None
            if len(_SEEN) > _CHUNK_CACHE:
                del _SEEN[next(iter(_SEEN))]
        else:
            _CHUNKS.move_to_end(key)
        aliases, clients = piece.aliases, piece.clients
        out.append((start, piece))
    return out


def _group(
    body: list[ast.stmt], starts: list[int], bounds: list[int]
) -> list[list[ast.stmt]] | None:
    """The top-level statements of each chunk, or None if one spans two chunks."""
    groups: list[list[ast.stmt]] = [[] for _ in starts]
    k = 0
    for node in body:
        first, last = _first_line(node), (node.end_lineno or node.lineno) - 1
        while k < len(starts) and first >= bounds[k]:
            k += 1
        if k == len(starts) or first < starts[k] or last >= bounds[k]:
            return None
        groups[k].append(node)
    return groups


_Placed = tuple[
    tuple[DurableFunction, ...],
    tuple[StepSite, ...],
    tuple[Finding, ...],
    tuple[tuple[str | None, Finding], ...],
]
_PLACED: OrderedDict[tuple[int, int], tuple[_Chunk, _Placed]] = OrderedDict()


def _placed(piece: _Chunk, start: int) -> _Placed:
    """A chunk's results moved to its line in the file (cached: typing moves few chunks)."""
    key = (id(piece), start)
    found = _PLACED.get(key)
    if found is not None and found[0] is piece:
        return found[1]
    moved = {id(s): _shift_site(s, start) for s in piece.sites}
    functions = tuple(
        DurableFunction(
            fn.qualname,
            fn.explicit,
            fn.is_async,
            _shift(fn.span, start),
            _shift(fn.name_span, start),
            tuple(moved[id(s)] for s in fn.steps),
        )
        for fn in piece.functions
    )
    placed = (
        functions,
        tuple(moved.values()),
        tuple(_shift_finding(f, start) for f in piece.findings),
        tuple((where, _shift_finding(f, start)) for where, f in piece.orphans),
    )
    _PLACED[key] = (piece, placed)  # holding the piece keeps its id from being reused
    if len(_PLACED) > _CHUNK_CACHE:
        _PLACED.popitem(last=False)
    return placed


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: parsing and building results allocate many objects
    and no cycles, and a full collection walks every cached result (tens of ms on 5,000 lines)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def analyze(source: str) -> Analysis:
    """Analyse a Python file or a notebook cell (a first line ``%%durable NAME``, or
    ``#%durable NAME`` as letitloop's lab extension hands a cell to jupyterlab-lsp's servers,
    makes the whole cell a durable context; other IPython magics are ignored). A cell as
    jupyterlab-lsp alone hands it over (``get_ipython().run_cell_magic("durable", ...)`` with
    the body in a string) is analysed as the cell it came from, with positions in the string."""
    with gc_paused():
        magic = _RUN_CELL_MAGIC.match(source)
        if magic is None:
            return _analyze(source)
        return _from_run_cell_magic(source, magic)


# jupyterlab-lsp's rewrite of a ``%%durable`` cell: the body follows the opening quotes on the
# same line, a triple quote inside it is escaped, and the call closes after the body
_RUN_CELL_MAGIC = re.compile(r'get_ipython\(\)\.run_cell_magic\("durable", "(.*?)", """')


def _from_run_cell_magic(source: str, magic: re.Match[str]) -> Analysis:
    body = source[magic.end() :]
    stripped = body.rstrip()
    if stripped.endswith('""")'):
        body = stripped[:-4]
    body = body.replace('\\"\\"\\"', '"""')
    found = _analyze(f"%%durable{magic.group(1)}\n{body}")
    shift = magic.end()  # the body's first line starts after the call's opening

    def moved(span: Span) -> Span:
        line, col = _back(span.line, span.col, shift)
        end_line, end_col = _back(span.end_line, span.end_col, shift)
        return Span(line, col, end_line, end_col)

    def site(s: StepSite) -> StepSite:
        return s._replace(span=moved(s.span), name_span=moved(s.name_span))

    functions = tuple(
        f._replace(
            span=moved(f.span), name_span=moved(f.name_span), steps=tuple(map(site, f.steps))
        )
        for f in found.functions
    )
    findings = tuple(f._replace(span=moved(f.span)) for f in found.findings)
    return found._replace(
        functions=functions, sites=tuple(map(site, found.sites)), findings=findings
    )


def _back(line: int, col: int, shift: int) -> tuple[int, int]:
    """A position in the cell (magic line first) as a position in jupyterlab-lsp's rewrite."""
    if line == 0:
        return 0, min(col, shift)
    return (0, col + shift) if line == 1 else (line - 1, col)


def _analyze(source: str) -> Analysis:
    text, cell = mask_cell(source)
    try:
        try:
            pieces = _chunks(text, cell)
        except SyntaxError:  # a wrong guess of where statements start, or a real error
            tree = ast.parse(text)
            pieces = [(0, _visit(tree.body, text.splitlines(), 0, cell, (), frozenset()))]
    except SyntaxError as exc:
        return Analysis((), (), (), f"line {exc.lineno}: {exc.msg}", cell)
    functions: list[DurableFunction] = []
    sites: list[StepSite] = []
    findings: list[Finding] = []
    orphans: list[tuple[str | None, Finding]] = []
    called: set[str] = set()
    for start, piece in pieces:
        placed = _placed(piece, start)
        functions += placed[0]
        sites += placed[1]
        findings += placed[2]
        orphans += placed[3]
        called |= piece.called
    if cell is not None:
        lines = text.splitlines() or [""]
        span = Span(0, 0, len(lines) - 1, len(lines[-1]))
        steps = tuple(s for s in sites if s.function == cell)
        functions.insert(
            0, DurableFunction(cell, cell, False, span, Span(0, 0, 0, len(lines[0])), steps)
        )
    kept = [f for where, f in orphans if where is None or where.split(".")[-1] not in called]
    ordered = sorted(findings + kept, key=lambda f: (f.span.line, f.span.col, f.code))
    return Analysis(tuple(functions), tuple(sites), tuple(ordered), None, cell)


def function_at(analysis: Analysis, line: int) -> DurableFunction | None:
    """The innermost durable function whose lines include ``line``."""
    inside = [f for f in analysis.functions if f.span.line <= line <= f.span.end_line]
    return min(inside, key=lambda f: f.span.end_line - f.span.line) if inside else None


def site_at(analysis: Analysis, line: int, col: int) -> StepSite | None:
    """The step, marker or approval call at a position (the innermost one)."""
    here = (line, col)
    inside = [
        s
        for s in analysis.sites
        if (s.span.line, s.span.col) <= here <= (s.span.end_line, s.span.end_col)
    ]
    return max(inside, key=lambda s: (s.span.line, s.span.col)) if inside else None


def enclosing_def(source: str, line: int) -> str | None:
    """The qualified name of the innermost function whose lines include ``line`` (0-based)."""
    try:
        tree = ast.parse(mask_cell(source)[0])
    except SyntaxError:
        return None
    best: tuple[int, str] | None = None

    def walk(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}{child.name}"
                first = min([d.lineno for d in child.decorator_list] + [child.lineno]) - 1
                if isinstance(child, ast.ClassDef):
                    walk(child, qual + ".")
                    continue
                if first <= line <= (child.end_lineno or child.lineno) - 1:
                    size = (child.end_lineno or 0) - first
                    if best is None or size <= best[0]:
                        best = (size, qual)
                walk(child, qual + ".<locals>.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return best[1] if best else None
