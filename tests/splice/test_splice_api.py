"""The splicer's API beyond the golden cases: errors and their fields, choose=, signature
policies, import handling, transform edge cases, and what importing it costs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import letitloop.splice as splice
from letitloop.errors import LetItLoopError
from letitloop.splice import (
    AmbiguousTargetError,
    InvalidSourceError,
    SignatureChangedError,
    SpliceError,
    TargetNotFoundError,
    add_durable,
    delete,
    insert,
    list_targets,
    replace,
    source_of,
    wrap_in_marker,
    wrap_in_step,
)
from tests.conftest import modules_after

ROOT = Path(__file__).resolve().parents[2]

SERVICE = """\
class Service:
    def fetch(self, url: str, *, timeout: float = 5.0) -> bytes:
        return b""

    def fetch_all(self, urls):
        return [self.fetch(u) for u in urls]


def fetch(url):
    return Service().fetch(url)
"""


# -- errors ------------------------------------------------------------------------------------


def test_errors_are_letitloop_errors_with_a_title_a_fix_and_fields() -> None:
    for cls in (
        SpliceError,
        TargetNotFoundError,
        AmbiguousTargetError,
        InvalidSourceError,
        SignatureChangedError,
    ):
        assert issubclass(cls, LetItLoopError)
        assert cls.title and cls.__doc__
    with pytest.raises(TargetNotFoundError) as info:
        replace(SERVICE, "Service.fecth", "def fetch(self): pass")
    err = info.value
    assert err.suggestions[0] == "Service.fetch"
    assert err.fix and "Class.method" in err.fix
    data = err.to_dict()
    assert data["type"] == "TargetNotFoundError" and data["suggestions"] == err.suggestions
    json.dumps(data)


def test_unknown_short_name_suggests_the_qualified_names_that_end_with_it() -> None:
    with pytest.raises(TargetNotFoundError) as info:
        delete(SERVICE, "fetch_all")
    assert info.value.suggestions[0] == "Service.fetch_all"
    with pytest.raises(TargetNotFoundError, match="it defines"):
        delete("def a(): pass\n", "zzzzzz")


def test_ambiguous_target_lists_candidates_and_choose_picks_by_number_or_line() -> None:
    source = "if FAST:\n    def f():\n        return 1\nelse:\n    def f():\n        return 2\n"
    with pytest.raises(AmbiguousTargetError) as info:
        delete(source, "f")
    err = info.value
    assert [(c.index, c.line) for c in err.candidates] == [(1, 2), (2, 5)]
    assert "1. line 2: def f()" in err.message and "--choose" in (err.fix or "")
    assert json.loads(json.dumps(err.to_dict()))["candidates"][1]["line"] == 5
    by_number = replace(source, "f", "def f():\n    return 3\n", choose=2).source
    by_line = replace(source, "f", "def f():\n    return 3\n", choose=6).source
    assert by_number == by_line == source.replace("return 2", "return 3")
    with pytest.raises(AmbiguousTargetError, match="choose=9 is neither"):
        delete(source, "f", choose=9)


def test_choose_on_a_unique_target_must_point_at_it() -> None:
    assert delete(SERVICE, "fetch", choose=1).changed == ("fetch",)
    assert delete(SERVICE, "fetch", choose=10).changed == ("fetch",)  # a line inside it
    with pytest.raises(AmbiguousTargetError):
        delete(SERVICE, "fetch", choose=4)


def test_short_form_that_matches_two_nested_functions_is_ambiguous() -> None:
    source = (
        "def a():\n    def b():\n        def c(): pass\n    return b\n\n"
        "class a_:\n    pass\n\n"
        "def x():\n    class a:\n        def b(self): pass\n"
    )
    assert [t.qualname for t in list_targets(source)][:3] == [
        "a",
        "a.<locals>.b",
        "a.<locals>.b.<locals>.c",
    ]
    assert replace(source, "a.b.c", "def c(): return 1").changed == ("a.<locals>.b.<locals>.c",)
    # 'x.a.b' is only the short form of x.<locals>.a.b
    assert delete(source, "x.a.b").changed == ("x.<locals>.a.b",)


def test_invalid_source_new_code_and_result_are_told_apart() -> None:
    with pytest.raises(InvalidSourceError) as info:
        replace("def f(:\n", "f", "def f(): pass")
    assert info.value.what == "source" and info.value.line == 1
    with pytest.raises(InvalidSourceError) as info:
        replace(SERVICE, "fetch", "\n\ndef fetch(url)\n    return 1\n")
    assert info.value.what == "new code" and info.value.line == 3
    assert "expected ':'" in info.value.message
    with pytest.raises(InvalidSourceError) as info:
        replace(SERVICE, "fetch", "def fetch(url, url):\n    return 1\n")
    assert info.value.what == "result" and "duplicate argument" in info.value.message
    with pytest.raises(InvalidSourceError, match="empty"):
        replace(SERVICE, "fetch", "  \n\n")


def test_new_code_must_be_one_definition_of_the_same_kind() -> None:
    with pytest.raises(SpliceError, match="2 statement"):
        replace(SERVICE, "fetch", "def fetch(url): pass\ndef more(): pass\n")
    with pytest.raises(SpliceError, match="is a class"):
        replace(SERVICE, "Service", "def Service(): pass\n")
    with pytest.raises(SpliceError, match="unknown signature policy"):
        replace(SERVICE, "fetch", "def fetch(url): pass", policy="frozen")


# -- replace details -----------------------------------------------------------------------------


def test_rename_lists_both_names_and_is_a_protected_change() -> None:
    result = replace(SERVICE, "fetch", "def get(url):\n    return url\n")
    assert result.changed == ("fetch", "get")
    with pytest.raises(SignatureChangedError, match="renamed fetch -> get"):
        replace(SERVICE, "fetch", "def get(url):\n    return url\n", protect="fetch")


def test_new_code_in_any_style_takes_the_files_newlines_and_indentation() -> None:
    crlf_tabs = "class A:\r\n\tdef m(self):\r\n\t\treturn 1\r\n"
    new = "def m(self):\r\n    if self:\r\n        return 2\r\n    return 3\r\n"
    assert replace(crlf_tabs, "A.m", new).source == (
        "class A:\r\n\tdef m(self):\r\n\t\tif self:\r\n\t\t\treturn 2\r\n\t\treturn 3\r\n"
    )
    spaces = "class A:\n    def m(self):\n        return 1\n"
    tabs_new = "\tdef m(self):\n\t\treturn 2\n"
    assert replace(spaces, "A.m", tabs_new).source == spaces.replace("1", "2")


def test_the_input_string_is_untouched_and_results_are_frozen() -> None:
    source = SERVICE
    result = replace(source, "fetch", "def fetch(url):\n    return 2\n")
    assert source == SERVICE and result.original == SERVICE
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.source = ""  # type: ignore[misc]
    assert result.diff.startswith("--- a/source.py\n+++ b/source.py\n")
    assert result.diff_for("pkg/app.py").startswith("--- a/pkg/app.py\n+++ b/pkg/app.py\n")
    same = replace(source, "fetch", source_of(source, "fetch"))
    assert same.unchanged and same.diff == "" and same.changed == ("fetch",)


# -- signature policies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("new", "allowed"),
    [
        ("def f(a, b=1, c=2): pass", True),
        ("def f(a, b=1, *args, **kwargs): pass", True),
        ("def f(a, b=1, *, c=3): pass", True),
        ("def f(a, b=1, *, c): pass", False),  # a required keyword-only parameter
        ("def f(a, c=2, b=1): pass", False),  # inserted before an existing one
        ("def f(a, b=2): pass", False),  # a default changed
        ("def f(a: int, b=1): pass", False),  # an annotation added
        ("def f(a, b=1) -> int: pass", False),  # a return annotation added
        ("@cache\ndef f(a, b=1): pass", False),  # a decorator added
        ("async def f(a, b=1): pass", False),
        ("def f(a, /, b=1): pass", False),  # a kind changed
        ("def f(a): pass", False),  # removed
        ("def f(a,   b = 1):  # reformatted\n    return 0", True),
    ],
)
def test_additive_policy(new: str, allowed: bool) -> None:
    source = "def f(a, b=1):\n    pass\n"
    if allowed:
        assert replace(source, "f", new, policy="additive").changed == ("f",)
    else:
        with pytest.raises(SignatureChangedError) as info:
            replace(source, "f", new, policy="additive")
        assert info.value.policy == "additive" and info.value.reasons
        assert info.value.old == "def f(a, b=1)"


def test_protect_reaches_methods_inside_a_replaced_class() -> None:
    source = "class Api:\n    def ping(self) -> str:\n        return 'pong'\n"
    body_only = "class Api:\n    def ping(self) -> str:\n        return 'PONG'\n"
    assert replace(source, "Api", body_only, protect={"Api.ping"}).changed == ("Api",)
    changed = "class Api:\n    def ping(self, loud=False) -> str:\n        return 'PONG'\n"
    with pytest.raises(SignatureChangedError) as info:
        replace(source, "Api", changed, protect={"Api.ping"})
    assert info.value.target == "Api.ping" and "parameter 'loud' added" in info.value.reasons
    assert info.value.new == "def ping(self, loud=False) -> str"
    assert replace(source, "Api", changed, protect={"Other.thing"}).changed == ("Api",)


# -- insert and delete -----------------------------------------------------------------------------


def test_insert_rejects_two_anchors_and_into_a_function() -> None:
    with pytest.raises(SpliceError, match="at most one"):
        insert(SERVICE, "def g(): pass", after="fetch", before="fetch")
    with pytest.raises(SpliceError, match="takes a class"):
        insert(SERVICE, "def g(): pass", into="fetch")


def test_insert_into_a_one_line_class_and_into_an_empty_file() -> None:
    assert insert("class A: ...  # todo\n", "def m(self):\n    return 1\n", into="A").source == (
        "class A:  # todo\n    def m(self):\n        return 1\n"
    )
    with pytest.raises(SpliceError, match="class line"):
        insert("class A: x = 1\n", "def m(self): pass", into="A")
    assert insert("", "def f():\n    pass\n").source == "def f():\n    pass\n"
    assert insert("x = 1", "def f():\n    pass\n").source == "x = 1\n\n\ndef f():\n    pass"


def test_insert_names_what_it_defined() -> None:
    result = insert(SERVICE, "def close(self):\n    pass\n\nTIMEOUT = 5\n", into="Service")
    assert result.changed == ("Service.close",)
    assert insert(SERVICE, "X = 1\n", into="Service").changed == ("Service",)


def test_delete_the_only_definition_of_a_block_leaves_pass() -> None:
    source = "try:\n    def f():\n        return 1\nexcept ImportError:\n    f = None\n"
    assert delete(source, "f", choose=1).source == (
        "try:\n    pass\nexcept ImportError:\n    f = None\n"
    )


# -- transforms ----------------------------------------------------------------------------------

FLOW = """\
from letitloop import durable, step as lil_step


@durable
def flow(x):
    a = load(x)
    b = lil_step("two", two, a)
    c = make()(a)
    d = compute(a, retry=3)
    return a, b, c, d
"""


def test_wrap_in_step_uses_an_existing_alias_and_checks_the_call() -> None:
    result = wrap_in_step(FLOW, 6, 9)
    assert 'a = lil_step("load", load, x)' in result.source
    assert result.source.count("import") == 1 and result.changed == ("flow",)
    with pytest.raises(SpliceError, match="already a step"):
        wrap_in_step(FLOW, 7, 10)
    with pytest.raises(SpliceError, match="no plain name"):
        wrap_in_step(FLOW, 8, 15)
    assert 'lil_step("factory", make(), a)' in wrap_in_step(FLOW, 8, 15, name="factory").source
    with pytest.raises(SpliceError, match="retry="):
        wrap_in_step(FLOW, 9, 9)
    with pytest.raises(SpliceError, match="no call at line 3"):
        wrap_in_step(FLOW, 3, 0)


def test_wrap_in_step_picks_the_innermost_call_and_quotes_odd_names() -> None:
    source = "def f():\n    return outer(inner(1))\n"
    assert 'outer(step("inner", inner, 1))' in wrap_in_step(source, 2, 20).source
    assert 'step("outer", outer, inner(1))' in wrap_in_step(source, 2, 12).source
    assert "step('say \"hi\"', outer" in wrap_in_step(source, 2, 12, name='say "hi"').source


def test_imports_merge_in_sorted_position_or_at_the_end() -> None:
    sorted_names = "from letitloop import atomic_marker, durable\n\nx = f(1)\n"
    assert wrap_in_step(sorted_names, 3, 4).source.startswith(
        "from letitloop import atomic_marker, durable, step\n"
    )
    unsorted = "from letitloop import durable, atomic_marker\n\nx = f(1)\n"
    assert wrap_in_step(unsorted, 3, 4).source.startswith(
        "from letitloop import durable, atomic_marker, step\n"
    )
    star = "from letitloop import *\n\nx = f(1)\n"
    assert wrap_in_step(star, 3, 4).source == 'from letitloop import *\n\nx = step("f", f, 1)\n'
    bare = "x = f(1)"
    assert wrap_in_step(bare, 1, 4).source == 'from letitloop import step\n\nx = step("f", f, 1)'


def test_imports_never_shadow_another_binding() -> None:
    with pytest.raises(SpliceError, match="imported from elsewhere"):
        wrap_in_step("from mylib import step\n\nx = f(1)\n", 3, 4)
    with pytest.raises(SpliceError, match="is defined in this module"):
        add_durable("def durable(f):\n    return f\n\n\ndef job():\n    pass\n", "job")


def test_add_durable_is_idempotent_and_refuses_classes() -> None:
    once = add_durable(SERVICE, "fetch")
    again = add_durable(once.source, "fetch")
    assert again.unchanged and again.changed == ()
    assert add_durable(
        "import letitloop\n\n@letitloop.durable(goal_id='x')\ndef f(): pass\n", "f"
    ).unchanged
    with pytest.raises(SpliceError, match="is a class"):
        add_durable(SERVICE, "Service")


def test_wrap_in_marker_needs_statements_and_a_name() -> None:
    source = "def f():\n    x = 1\n\n    # only a comment\n    return x\n"
    with pytest.raises(SpliceError, match="hold no statement"):
        wrap_in_marker(source, 3, 4, "m")
    with pytest.raises(SpliceError, match="non-empty name"):
        wrap_in_marker(source, 2, 2, "")
    reversed_lines = wrap_in_marker(source, 5, 2, "all")
    assert reversed_lines.source.count("should_execute") == 2
    assert reversed_lines.changed == ("f",)


def test_wrap_in_marker_keeps_multiline_string_contents() -> None:
    source = 'def f():\n    sql = """\nSELECT 1\n"""\n    run(sql)\n'
    result = wrap_in_marker(source, 2, 5, "query")
    assert '            sql = """\nSELECT 1\n"""\n            run(sql)\n' in result.source


# -- the package -------------------------------------------------------------------------------


def test_exports_resolve_and_are_documented() -> None:
    assert splice.__all__ == sorted(splice._EXPORTS)
    for name in splice.__all__:
        assert getattr(splice, name).__doc__, name


def test_importing_letitloop_the_kernel_or_the_cli_does_not_load_libcst() -> None:
    loaded = modules_after(
        "import letitloop\n"
        "from letitloop import durable, step, atomic_marker\n"
        "import letitloop.kernel._runtime, letitloop.journal.duckdb._client\n"
        "import letitloop.journal._memory\n"
        "import letitloop.cli, letitloop.cli._splice\n"
        "from letitloop.splice import SpliceError, SpliceResult, TargetNotFoundError"
    )
    assert "libcst" not in loaded
    assert not [
        m
        for m in loaded
        if m.startswith("letitloop.splice._")
        and m
        not in {"letitloop.splice._errors", "letitloop.splice._result", "letitloop.splice._text"}
    ]
    assert "libcst" in modules_after("from letitloop.splice import replace")


def test_the_kernel_never_imports_the_splicer() -> None:
    for path in (ROOT / "letitloop" / "kernel").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "letitloop.splice" not in text and "libcst" not in text, path
