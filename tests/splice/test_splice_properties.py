"""Property tests: for generated modules (functions, classes, methods, nested functions, with
comments, blank lines, decorators, docstrings; indented with 4 spaces or a tab; LF or CRLF;
with or without a final newline), splicing never touches a byte it should not."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from letitloop.splice import delete, list_targets, replace, source_of
from letitloop.splice._index import Index

FAST = settings(
    max_examples=30,
    deadline=None,
    database=None,  # nothing written into the repository
    suppress_health_check=[HealthCheck.too_slow],
)
# These replace every definition of each module (several splices per example).
EVERY = settings(FAST, max_examples=20)


def _body(draw: Any, name: str, indent: str, unit: str, nested: bool) -> list[str]:
    out = []
    if draw(st.booleans()):
        out += [f'{indent}"""Docstring of {name}.', "", f"{indent}More text.", f'{indent}"""']
    kinds = st.sampled_from(["x", "comment", "blank", "list", "if"])
    for kind in draw(st.lists(kinds, max_size=4)):
        if kind == "x":
            out.append(f"{indent}x = {draw(st.integers(0, 99))}  # set x")
        elif kind == "comment":
            out.append(f"{indent}# a comment inside {name}")
        elif kind == "blank":
            out.append(draw(st.sampled_from(["", indent])))
        elif kind == "list":
            out += [f"{indent}y = [", f"{indent}{unit}1,", f"{indent}{unit}'ü',", f"{indent}]"]
        else:
            out += [f"{indent}if x:", f"{indent}{unit}x += 1"]
    if nested and draw(st.booleans()):
        out += _function(draw, f"{name}_inner", indent, unit, nested=False)
    out.append(f"{indent}return None")
    if draw(st.booleans()):
        out.append(f"{indent}# trailing comment of {name}")
    return out


def _leading(draw: Any, name: str, indent: str) -> list[str]:
    out = [f"{indent}# about {name} ({n})" for n in range(draw(st.integers(0, 2)))]
    for k in range(draw(st.integers(0, 2))):
        suffix = draw(st.sampled_from(["", "(1)", "  # why"]))
        out.append(f"{indent}@decorator_{k}{suffix}")
    return out


def _function(draw: Any, name: str, indent: str, unit: str, nested: bool = True) -> list[str]:
    keyword = draw(st.sampled_from(["def", "async def"]))
    params = draw(st.sampled_from(["()", "(self, a, b=1)", "(*args, **kwargs)", "(x: int) -> int"]))
    return [
        *_leading(draw, name, indent),
        f"{indent}{keyword} {name}{params}:",
        *_body(draw, name, indent + unit, unit, nested),
    ]


def _class(draw: Any, name: str, unit: str) -> list[str]:
    out = [*_leading(draw, name, ""), f"class {name}:"]
    if draw(st.booleans()):
        out.append(f'{unit}"""Class {name}."""')
    methods = draw(st.integers(0, 3))
    for m in range(methods):
        if m or len(out) > 2:
            out += [""] * draw(st.integers(0, 1))
        out += _function(draw, f"m{m}", unit, unit)
    if not methods:
        out.append(f"{unit}pass")
    return out


@st.composite
def modules(draw: Any) -> str:
    unit = draw(st.sampled_from(["    ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = []
    if draw(st.booleans()):
        lines += ["# Copyright (c) 2025 Example", "# SPDX-License-Identifier: MIT"]
        lines += [""] * draw(st.integers(0, 1))
    if draw(st.booleans()):
        lines += ['"""Module docstring."""', ""]
    for i in range(draw(st.integers(1, 4))):
        if i:
            lines += [""] * draw(st.integers(0, 2))
        if draw(st.booleans()):
            lines += _class(draw, f"C{i}", unit)
        else:
            lines += _function(draw, f"f{i}", "", unit)
    text = newline.join(lines)
    return text + newline if draw(st.booleans()) else text


@st.composite
def new_functions(draw: Any, name: str) -> str:
    """Some other code for ``name``: flush left, 4 spaces, LF."""
    return "\n".join(_function(draw, name, "", "    ", nested=False)) + "\n"


def _flush_left(text: str, indent: str, unit: str) -> str:
    """``text`` (a definition at ``indent``) moved to column 0, re-indented with 4 spaces and
    LF line endings, as an agent would send it."""
    out = []
    for line in text.replace("\r\n", "\n").split("\n"):
        line = line.removeprefix(indent)
        stripped = line.lstrip("\t")
        out.append("    " * (len(line) - len(stripped)) + stripped if unit == "\t" else line)
    return "\n".join(out)


@EVERY
@given(modules())
def test_replacing_any_definition_with_its_own_source_is_a_no_op(source: str) -> None:
    index = Index(source)
    assert [t.qualname for t in list_targets(source)] == [d.qualname for d in index.definitions]
    first = index.definitions[0]
    assert source_of(source, first.qualname) == source[first.attach : first.end]
    for d in index.definitions:
        own = source[d.attach : d.end]
        assert replace(source, d.qualname, own).source == source, d.qualname


@EVERY
@given(modules())
def test_own_source_flush_left_with_another_style_comes_back_identical(source: str) -> None:
    index = Index(source)
    unit = index.module.default_indent
    for d in index.definitions:
        own = _flush_left(source[d.attach : d.end], d.indent, unit)
        result = replace(source, d.qualname, own)
        assert result.source == source, (d.qualname, result.diff)
        bare = _flush_left(source[d.head : d.end], d.indent, unit)  # no comments, decorators
        assert replace(source, d.qualname, bare).source == source, d.qualname


@FAST
@given(modules(), st.data())
def test_replacing_a_function_never_touches_bytes_outside_it(source: str, data: Any) -> None:
    index = Index(source)
    functions = [d.qualname for d in index.definitions if d.kind != "class"]
    assume(functions)
    d = index.resolve(data.draw(st.sampled_from(functions)))
    new = data.draw(new_functions(d.name))
    result = replace(source, d.qualname, new)
    head, tail = source[: d.attach], source[d.end :]
    assert result.source.startswith(head)
    assert result.source.endswith(tail)
    middle = result.source[len(head) : len(result.source) - len(tail)]
    if index.newline == "\r\n":
        assert "\n" not in middle.replace("\r\n", ""), "new code takes the file's CRLF"
    assert ("\t" in middle) == (index.module.default_indent == "\t") or d.indent == ""
    for other in index.definitions:
        if not _inside(other.qualname, d.qualname) and not _inside(d.qualname, other.qualname):
            assert source[other.attach : other.end] in result.source


def _inside(name: str, outer: str) -> bool:
    return name == outer or name.startswith(outer + ".")


@FAST
@given(modules(), st.data())
def test_delete_keeps_every_other_definition_byte_for_byte(source: str, data: Any) -> None:
    index = Index(source)
    name = data.draw(st.sampled_from([d.qualname for d in index.definitions]))
    d = index.resolve(name)
    result = delete(source, d.qualname)
    for other in index.definitions:
        if not _inside(other.qualname, d.qualname) and not _inside(d.qualname, other.qualname):
            # (a file without a final newline keeps having none: the last one may go)
            assert source[other.attach : other.end].rstrip("\r\n") in result.source
    assert len(result.source) < len(source)
    assert d.qualname not in {t.qualname for t in list_targets(result.source)}
