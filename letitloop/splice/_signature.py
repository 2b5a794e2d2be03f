"""Signature policies: what a replacement may change in a definition's interface.

A signature is the name, ``def``/``async def``/``class``, decorators, parameters (name, kind,
default, annotation, in order) and return annotation; for a class, its name, decorators, bases
and keywords. Expressions are compared as ``ast.unparse`` prints them, so formatting, comments
and quote style never count as a change.

- ``protect``: the signature must stay exactly the same.
- ``"additive"``: existing parameters stay as they were (name, kind, position, default,
  annotation), decorators and return annotation too; the only changes allowed are new
  parameters with defaults (positional ones after the existing ones, or keyword-only), and an
  added ``*args`` or ``**kwargs``.

Both apply to the target and to every definition inside it (a class's methods): a protected
method that the new class drops or changes is a violation. This module does not import libcst.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from letitloop.splice._errors import SignatureChangedError

POLICIES = (None, "additive")
FuncNode = ast.FunctionDef | ast.AsyncFunctionDef
DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # positional-only, positional-or-keyword, *args, keyword-only, **kwargs
    annotation: str | None
    default: str | None


@dataclass(frozen=True)
class Signature:
    """The interface of one definition, comparable and printable."""

    keyword: str  # "def", "async def" or "class"
    name: str
    decorators: tuple[str, ...]
    params: tuple[Param, ...]
    returns: str | None
    bases: tuple[str, ...]
    text: str  # e.g. "@cache def f(a: int, /, b=1, *, c) -> str"

    @classmethod
    def of(cls, node: DefNode) -> Signature:
        decorators = tuple(ast.unparse(d) for d in node.decorator_list)
        if isinstance(node, ast.ClassDef):
            bases = tuple(ast.unparse(b) for b in node.bases) + tuple(
                ast.unparse(k) for k in node.keywords
            )
            return cls("class", node.name, decorators, (), None, bases, _render(node))
        keyword = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        returns = ast.unparse(node.returns) if node.returns else None
        return cls(keyword, node.name, decorators, _params(node), returns, (), _render(node))


def _params(node: FuncNode) -> tuple[Param, ...]:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    out = []
    for i, arg in enumerate(positional):
        kind = "positional-only" if i < len(a.posonlyargs) else "positional-or-keyword"
        out.append(_param(arg, kind, defaults[i]))
    if a.vararg:
        out.append(_param(a.vararg, "*args", None))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(_param(arg, "keyword-only", default))
    if a.kwarg:
        out.append(_param(a.kwarg, "**kwargs", None))
    return tuple(out)


def _param(arg: ast.arg, kind: str, default: ast.expr | None) -> Param:
    annotation = ast.unparse(arg.annotation) if arg.annotation else None
    return Param(arg.arg, kind, annotation, ast.unparse(default) if default else None)


def _render(node: DefNode) -> str:
    """The definition's header on one line, decorators first."""
    head = copy.copy(node)
    head.body = [ast.Expr(ast.Constant(...))]
    text = ast.unparse(head)
    lines = text.splitlines()
    header = " ".join(line.strip() for line in lines[:-1])
    return header.removesuffix(":")


def differences(old: Signature, new: Signature, *, additive: bool) -> list[str]:
    """What changed between two signatures, as sentences; empty if the change is allowed."""
    out = []
    if old.name != new.name:
        out.append(f"renamed {old.name} -> {new.name}")
    if old.keyword != new.keyword:
        out.append(f"{old.keyword} became {new.keyword}")
    if old.decorators != new.decorators:
        out.append(f"decorators {_seq(old.decorators)} -> {_seq(new.decorators)}")
    if old.bases != new.bases:
        out.append(f"bases {_seq(old.bases, '()')} -> {_seq(new.bases, '()')}")
    if old.returns != new.returns:
        out.append(f"return annotation {old.returns or '(none)'} -> {new.returns or '(none)'}")
    out += _param_differences(old.params, new.params, additive)
    return out


def _seq(items: tuple[str, ...], empty: str = "(none)") -> str:
    return ", ".join(items) if items else empty


def _param_differences(old: tuple[Param, ...], new: tuple[Param, ...], additive: bool) -> list[str]:
    out = []
    by_name = {p.name: p for p in new}
    for p in old:
        q = by_name.get(p.name)
        if q is None:
            out.append(f"parameter {p.name!r} removed")
            continue
        if q.kind != p.kind:
            out.append(f"parameter {p.name!r} changed kind: {p.kind} -> {q.kind}")
        if q.annotation != p.annotation:
            out.append(
                f"parameter {p.name!r} annotation {p.annotation or '(none)'} -> "
                f"{q.annotation or '(none)'}"
            )
        if q.default != p.default:
            out.append(
                f"parameter {p.name!r} default {p.default or '(none)'} -> {q.default or '(none)'}"
            )
    old_names = {p.name for p in old}
    for q in new:
        if q.name in old_names:
            continue
        if not additive:
            out.append(f"parameter {q.name!r} added")
        elif q.kind not in ("*args", "**kwargs") and q.default is None:
            out.append(f"new parameter {q.name!r} has no default, so existing calls would break")
    old_pos = [p.name for p in old if p.kind in ("positional-only", "positional-or-keyword")]
    new_pos = [p.name for p in new if p.kind in ("positional-only", "positional-or-keyword")]
    if additive:
        moved = set(old_pos) <= set(new_pos) and new_pos[: len(old_pos)] != old_pos
    else:
        common = set(old_pos) & set(new_pos)
        moved = [n for n in old_pos if n in common] != [n for n in new_pos if n in common]
    if moved:
        out.append(f"positional parameters moved: ({', '.join(old_pos)}) -> ({', '.join(new_pos)})")
    return out


def definitions_in(node: DefNode, path: str = "") -> Iterator[tuple[str, DefNode]]:
    """``node`` (path "") and every definition inside it, with paths relative to it in
    qualified-name form (``.method``, ``.<locals>.helper``)."""
    yield path, node
    prefix = path + (".<locals>." if not isinstance(node, ast.ClassDef) else ".")
    stack: list[ast.AST] = list(ast.iter_child_nodes(node))
    found: list[tuple[str, DefNode]] = []
    while stack:
        child = stack.pop(0)
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((prefix + child.name, child))
        elif isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
            stack[:0] = [c for c in ast.iter_child_nodes(child) if not isinstance(c, ast.expr)]
    for sub_path, child in found:
        yield from definitions_in(child, sub_path)


def check(
    old: DefNode,
    new: DefNode,
    *,
    qualname: str,
    protect: Collection[str],
    policy: str | None,
) -> None:
    """Raise ``SignatureChangedError`` if replacing ``old`` by ``new`` breaks ``protect`` or
    ``policy``. Nested definitions are paired by their path and, when several share one
    (overloads), by their order."""
    protected = {p.strip() for p in protect}
    if not protected and policy is None:
        return
    new_defs: dict[str, list[DefNode]] = {}
    for path, node in definitions_in(new):
        new_defs.setdefault(path, []).append(node)
    seen: dict[str, int] = {}
    for path, node in definitions_in(old):
        name = qualname + path
        is_protected = name in protected or name.replace(".<locals>", "") in protected
        if not is_protected and policy is None:
            continue
        nth = seen[path] = seen.get(path, -1) + 1
        candidates = new_defs.get(path, [])
        old_sig = Signature.of(node)
        mode = "protect" if is_protected else "additive"
        if nth >= len(candidates):
            raise SignatureChangedError(
                name, old=old_sig.text, new=None, reasons=[f"{name} is gone"], policy=mode
            )
        new_sig = Signature.of(candidates[nth])
        reasons = differences(old_sig, new_sig, additive=not is_protected)
        if reasons:
            raise SignatureChangedError(
                name, old=old_sig.text, new=new_sig.text, reasons=reasons, policy=mode
            )


def find_def(tree: ast.Module, line: int) -> DefNode:
    """The definition whose ``def``/``class`` keyword is on ``line``."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
            node.lineno == line
        ):
            return node
    raise LookupError(f"no definition starts on line {line}")
