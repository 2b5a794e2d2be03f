"""The rules of the durable-code analysis: one AST visitor that finds durable functions, their
steps, markers and approvals, and what in them would make a replay take a different path.

``_analysis.analyze`` runs it per top-level statement and caches the results. Positions are
0-based lines and code-point columns (``_positions.Span``), relative to the text visited.

Diagnostic codes (docs/editors.md has the table):

- ``LIL001`` non-deterministic call (time, random, uuid, urandom, secrets) outside a step;
- ``LIL002`` environment read outside a step;
- ``LIL003`` network call (requests, httpx, openai, anthropic, ...) outside a step;
- ``LIL004`` a step or marker whose name is not a string literal;
- ``LIL005`` ``step()``/``atomic_marker()`` outside any durable function;
- ``LIL006`` a side effect outside a step or marker (hint).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from letitloop.lsp._positions import Span, byte_to_char

STEP_KINDS = {
    "step": "step",
    "async_step": "step",
    "atomic_marker": "marker",
    "approval": "approval",
}
DURABLE_DECORATORS = ("durable", "durable_async")

_TIME = {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"}
_TIME |= {"localtime", "gmtime", "ctime", "asctime"}
NONDETERMINISTIC = {f"time.{n}" for n in _TIME} | {
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "datetime.datetime.today",
    "datetime.date.today",
    "uuid.uuid1",
    "uuid.uuid4",
    "os.urandom",
    "os.getrandom",
}
NONDETERMINISTIC_MODULES = ("random", "secrets", "numpy.random")
ENVIRONMENT = {"os.getenv", "os.environ.get", "os.getenvb", "os.environ.copy", "dict"}
ENVIRONMENT.discard("dict")
NETWORK_MODULES: tuple[str, ...] = (
    "requests",
    "httpx",
    "openai",
    "anthropic",
    "aiohttp",
    "urllib.request",
)
NETWORK_MODULES += ("urllib3", "socket", "smtplib", "boto3", "litellm")
SIDE_EFFECTS = {
    "os.system",
    "os.remove",
    "os.unlink",
    "os.rename",
    "os.replace",
    "os.mkdir",
    "os.makedirs",
    "os.rmdir",
    "shutil.rmtree",
    "shutil.copy",
    "shutil.copyfile",
    "shutil.move",
}
SIDE_EFFECT_MODULES = ("subprocess",)
SIDE_EFFECT_METHODS = {"write", "write_text", "write_bytes", "writelines", "send", "sendall"}
SIDE_EFFECT_METHODS |= {"sendmail", "send_message", "unlink", "publish", "commit", "rmtree"}

# What each code says, for the docs table and the tests (severity, summary, quick fix).
CODES = {
    "LIL001": ("warning", "non-deterministic call outside a step", "wrap_in_step"),
    "LIL002": ("warning", "environment read outside a step", "wrap_in_step"),
    "LIL003": ("warning", "network call outside a step", "wrap_in_step"),
    "LIL004": ("information", "step name is not a string literal", None),
    "LIL005": ("warning", "step or marker outside any durable function", "add_durable"),
    "LIL006": ("hint", "side effect outside a step or marker", "wrap_in_marker"),
}


def dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The dotted name an expression spells (``np.random.rand``), its first name read through
    the module's import ``aliases``; None for anything but names and attributes."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


class Finding(NamedTuple):
    """One diagnostic: a code from ``CODES``, the message, where, and the quick fix to offer."""

    code: str
    message: str
    severity: str  # "error" | "warning" | "information" | "hint"
    span: Span
    fix: str | None  # "wrap_in_step" | "wrap_in_marker" | "add_durable" | None
    target: str | None = None  # add_durable: the function to decorate
    callee: str | None = None  # the call's resolved dotted name (``os.environ.get``), if any


class StepSite(NamedTuple):
    """A ``step``/``async_step``/``atomic_marker``/``approval`` call in the source."""

    kind: str  # "step" | "marker" | "approval"
    name: str | None  # the literal name, None if computed
    span: Span  # the whole call
    name_span: Span  # the callee (``step``), where hovers and lenses anchor
    function: str | None  # qualname of the enclosing durable function, None outside one
    straight: bool  # not inside a loop, branch or try: its position is its order in the body


class DurableFunction(NamedTuple):
    """A ``@durable``/``@durable_async`` function, or a ``%%durable`` cell."""

    qualname: str
    explicit: str | None  # ``name=`` given to the decorator (or the cell's name)
    is_async: bool
    span: Span  # from the first decorator to the end of the body
    name_span: Span  # the function's name
    steps: tuple[StepSite, ...]


_MAGIC = re.compile(r"^[ \t]*(%|!)")
# a ``%%durable`` cell as the letitloop lab extension hands it to jupyterlab-lsp's servers: a
# document of its own whose first line is the magic as a comment of the same length
LAB_CELL = "#%durable"


def mask_cell(source: str) -> tuple[str, str | None]:
    """A notebook cell with its IPython magics turned into comments of the same length (so
    every position stays put), and the name given to ``%%durable``, if it is such a cell."""
    lines = source.splitlines(keepends=True)
    if not lines or not lines[0].lstrip().startswith(("%", LAB_CELL)):
        return source, None
    cell = None
    first = lines[0].split()
    if first and first[0] in ("%%durable", LAB_CELL):
        names = [w for w in first[1:] if not w.startswith("-")]
        cell = names[0] if names else "cell"
    out = []
    for line in lines:
        match = _MAGIC.match(line)
        out.append(line[: match.start(1)] + "#" + line[match.end(1) :] if match else line)
    return "".join(out), cell


_NONDET_PREFIXES = tuple(f"{m}." for m in NONDETERMINISTIC_MODULES)
_NETWORK_PREFIXES = tuple(f"{m}." for m in NETWORK_MODULES)
_EFFECT_PREFIXES = tuple(f"{m}." for m in SIDE_EFFECT_MODULES)
_DISPATCH: dict[type, Callable[[RuleVisitor, Any], None]] = {}
_CHILDREN: dict[type, Callable[[RuleVisitor, Any], None]] = {}


def _children(cls: type) -> Callable[[RuleVisitor, Any], None]:
    """A function visiting the AST children of a node of class ``cls`` (its ``ctx`` aside)."""
    found = _CHILDREN.get(cls)
    if found is not None:
        return found
    fields = tuple(f for f in cls._fields if f != "ctx")  # type: ignore[attr-defined]
    AST = ast.AST

    def visit_children(visitor: RuleVisitor, node: Any) -> None:
        visit = visitor.visit
        for field in fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, AST):
                        visit(item)
            elif isinstance(value, AST):
                visit(value)

    _CHILDREN[cls] = visit_children
    return visit_children


class _Scope(NamedTuple):
    durable: DurableFunction | None  # the durable function whose body this is
    function: str | None  # qualname of the innermost def
    checked: bool  # diagnose non-determinism and side effects here
    straight: bool


class RuleVisitor(ast.NodeVisitor):
    """Walks top-level statements in order, collecting durable functions, step sites and
    findings; its import aliases and client variables carry over from one chunk to the next."""

    def __init__(self, lines: list[str], cell: str | None, offset: int = 0) -> None:
        self.lines = lines  # the chunk's lines; node line numbers are ``offset`` past them
        self.offset = offset
        self.aliases: dict[str, str] = {}
        self.clients: set[str] = set()
        self.functions: list[DurableFunction] = []
        self.steps: dict[str, list[StepSite]] = {}
        self.sites: list[StepSite] = []
        self.findings: list[Finding] = []
        self.orphans: list[tuple[str | None, Finding]] = []  # LIL005 candidates
        self.called_in_durable: set[str] = set()
        self.qual: list[str] = []
        cell_fn = None
        if cell is not None:
            end = len(lines)
            span = Span(0, 0, max(end - 1, 0), len(lines[-1]) if lines else 0)
            cell_fn = DurableFunction(cell, cell, False, span, Span(0, 0, 0, len(lines[0])), ())
            self.steps[cell] = []
        self.scope = _Scope(cell_fn, cell, cell is not None, True)

    # -- traversal: ast.NodeVisitor's, minus its per-node string building and ctx nodes ------
    def visit(self, node: ast.AST) -> None:
        cls = node.__class__
        method = _DISPATCH.get(cls)
        if method is None:
            found: Any = getattr(RuleVisitor, "visit_" + cls.__name__, None)
            method = _DISPATCH[cls] = found if found is not None else _children(cls)
        method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        _children(node.__class__)(self, node)

    def visit_Name(self, node: ast.Name) -> None:
        pass

    def visit_Constant(self, node: ast.Constant) -> None:
        pass

    # -- positions and names -------------------------------------------------------------
    def span(self, node: ast.AST) -> Span:
        start = node.lineno - 1 - self.offset  # type: ignore[attr-defined]
        line, end_line = start, (node.end_lineno or node.lineno) - 1 - self.offset  # type: ignore[attr-defined]
        col = byte_to_char(self.lines[line], node.col_offset)  # type: ignore[attr-defined]
        end = byte_to_char(self.lines[end_line], node.end_col_offset or 0)  # type: ignore[attr-defined]
        return Span(line, col, end_line, end)

    def dotted(self, node: ast.AST) -> str | None:
        return dotted(node, self.aliases)

    def letitloop_name(self, node: ast.AST) -> str | None:
        """``step``/``durable``/... if ``node`` names that letitloop function, else None."""
        if isinstance(node, ast.Name) and node.id not in self.aliases:
            return node.id
        full = self.dotted(node)
        if full and full.startswith("letitloop."):
            return full.rsplit(".", 1)[-1]
        return None

    # -- imports and clients --------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                root = a.name.split(".")[0]
                self.aliases[root] = root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for a in node.names:
            self.aliases[a.asname or a.name] = f"{module}.{a.name}" if module else a.name

    def _client(self, value: ast.AST | None) -> bool:
        if not isinstance(value, ast.Call):
            return False
        full = self.dotted(value.func) or ""
        return full.startswith(_NETWORK_PREFIXES)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self._client(node.value):
            self.clients.update(t.id for t in node.targets if isinstance(t, ast.Name))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and self._client(node.value):
            self.clients.add(node.target.id)
        self.generic_visit(node)

    # -- definitions ----------------------------------------------------------------------
    def _durable_decorator(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> tuple[bool, str | None]:
        for dec in node.decorator_list:
            func = dec.func if isinstance(dec, ast.Call) else dec
            if self.letitloop_name(func) in DURABLE_DECORATORS:
                explicit = None
                if isinstance(dec, ast.Call):
                    for kw in dec.keywords:
                        if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                            explicit = str(kw.value.value)
                return True, explicit
        return False, None

    def _name_span(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Span:
        line = node.lineno - 1 - self.offset
        text = self.lines[line]
        start = byte_to_char(text, node.col_offset)  # at `def` or `async`
        keyword = text.find("def", start)
        col = keyword + 3
        while col < len(text) and text[col] in " \t":
            col += 1
        if keyword < 0 or not text.startswith(node.name, col):  # `def` on another line
            col = start
        return Span(line, col, line, col + len(node.name))

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.qual.append(node.name)
        qualname = ".".join(self.qual)
        for dec in node.decorator_list:
            self.visit(dec)
        is_durable, explicit = self._durable_decorator(node)
        outer = self.scope
        if is_durable:
            first = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1 - self.offset
            body = self.span(node)
            span = Span(first, 0, body.end_line, body.end_col)
            fn = DurableFunction(
                qualname,
                explicit,
                isinstance(node, ast.AsyncFunctionDef),
                span,
                self._name_span(node),
                (),
            )
            self.steps[qualname] = []
            self.functions.append(fn)
            self.scope = _Scope(fn, qualname, True, True)
        elif outer.durable is not None:  # a helper defined inside a durable function
            self.scope = _Scope(outer.durable, qualname, False, False)
        else:
            self.scope = _Scope(None, qualname, False, False)
        self.qual.append("<locals>")
        for stmt in node.body:
            self.visit(stmt)
        self.qual.pop()
        self.scope = outer
        self.qual.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.qual.append(node.name)
        outer = self.scope
        self.scope = _Scope(outer.durable, outer.function, False, False)
        self.generic_visit(node)
        self.scope = outer
        self.qual.pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        outer = self.scope
        self.scope = outer._replace(checked=False, straight=False)
        self.generic_visit(node)
        self.scope = outer

    def _branch(self, node: ast.AST) -> None:
        outer = self.scope
        self.scope = outer._replace(straight=False)
        self.generic_visit(node)
        self.scope = outer

    visit_For = visit_AsyncFor = visit_While = visit_If = visit_Try = _branch
    visit_IfExp = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _branch
    visit_Match = visit_BoolOp = _branch

    def visit_TryStar(self, node: ast.AST) -> None:
        self._branch(node)

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        marked = False
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.visit(item.optional_vars)
                if self._client(item.context_expr) and isinstance(item.optional_vars, ast.Name):
                    self.clients.add(item.optional_vars.id)
            expr = item.context_expr
            if isinstance(expr, ast.Call) and self.letitloop_name(expr.func) == "atomic_marker":
                marked = True
        outer = self.scope
        if marked:  # the block runs at most once: effects and clocks are what it is for
            self.scope = outer._replace(checked=False)
        for stmt in node.body:
            self.visit(stmt)
        self.scope = outer

    visit_With = visit_AsyncWith = _with

    # -- calls ----------------------------------------------------------------------------
    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self.scope.checked and self.dotted(node.value) == "os.environ":
            self.report(
                "LIL002", node, "os.environ[...] is read outside a step", callee="os.environ[]"
            )
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        helper = self.letitloop_name(node.func)
        if helper in STEP_KINDS:
            self._site(node, helper)
            outer = self.scope
            self.scope = outer._replace(straight=False)
            for arg in [*node.args, *[k.value for k in node.keywords]]:
                self.visit(arg)
            self.scope = outer
            return
        if self.scope.durable is not None and isinstance(node.func, ast.Name):
            self.called_in_durable.add(node.func.id)
        if self.scope.checked:
            self._check(node)
        self.generic_visit(node)

    def _site(self, node: ast.Call, helper: str) -> None:
        kind = STEP_KINDS[helper]
        first = node.args[0] if node.args else None
        name = (
            first.value
            if isinstance(first, ast.Constant) and isinstance(first.value, str)
            else None
        )
        scope = self.scope
        fn = scope.durable.qualname if scope.durable is not None else None
        site = StepSite(kind, name, self.span(node), self.span(node.func), fn, scope.straight)
        self.sites.append(site)
        if fn is not None and fn in self.steps:
            self.steps[fn].append(site)
        if name is None and first is not None:
            self.report(
                "LIL004",
                first,
                f"the {helper}() name is computed: hovers, lenses and journal checks cannot match "
                "it; a literal name is checked on replay",
            )
        if fn is None:
            where = scope.function
            finding = Finding(
                "LIL005",
                f"{helper}() is called outside any durable function"
                + (f": make {where} @durable, or call it only from one" if where else ""),
                "warning" if where is None else "information",
                site.span,
                "add_durable" if where else None,
                where,
            )
            self.orphans.append((where, finding))

    def _check(self, node: ast.Call) -> None:
        full = self.dotted(node.func) or ""
        root = full.split(".")[0]
        last = full.rsplit(".", 1)[-1]
        if full in NONDETERMINISTIC or (
            full.startswith(_NONDET_PREFIXES) and last[:1].islower() and last != "seed"
        ):
            self.report(
                "LIL001",
                node,
                f"{full}() gives a different value on replay: journal it in a step",
                callee=full,
            )
        elif full in ENVIRONMENT:
            self.report(
                "LIL002",
                node,
                f"{full}() reads the environment, which may differ on resume: journal it in a step",
                callee=full,
            )
        elif root in self.clients or (full.startswith(_NETWORK_PREFIXES) and last[:1].islower()):
            self.report(
                "LIL003",
                node,
                f"{full}() calls the network outside a step: a resume repeats it and may get "
                "a different answer",
                callee=full,
            )
        elif (
            full in SIDE_EFFECTS
            or full.startswith(_EFFECT_PREFIXES)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in SIDE_EFFECT_METHODS)
            or (full == "open" and _writes(node))
        ):
            self.report(
                "LIL006",
                node,
                f"{full or last}() has a side effect that a resume repeats: put it in a step or "
                "an atomic_marker block",
                callee=full or last,
            )

    def report(self, code: str, node: ast.AST, message: str, callee: str | None = None) -> None:
        severity, _, fix = CODES[code]
        self.findings.append(Finding(code, message, severity, self.span(node), fix, callee=callee))


def _writes(node: ast.Call) -> bool:
    mode = node.args[1] if len(node.args) > 1 else None
    for kw in node.keywords:
        if kw.arg == "mode":
            mode = kw.value
    return (
        isinstance(mode, ast.Constant)
        and isinstance(mode.value, str)
        and bool(set(mode.value) & set("wax+"))
    )
