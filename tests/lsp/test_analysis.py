"""The pure analysis over the corpus in tests/data/lsp (one file per diagnostic code), plus the
column conversions every position goes through."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from letitloop.lsp._analysis import CODES, analyze, enclosing_def, function_at, site_at
from letitloop.lsp._positions import (
    byte_to_char,
    byte_to_utf16,
    char_to_utf16,
    from_encoding,
    to_encoding,
    utf16_to_char,
)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "lsp"
FILES = sorted(CORPUS.glob("*.py"))
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")


def expected(text: str) -> set[tuple[int, str]]:
    out = set()
    for number, line in enumerate(text.splitlines()):
        match = EXPECT.search(line)
        if match:
            out |= {(number, code.strip()) for code in match.group(1).split(",")}
    return out


def test_corpus_covers_every_code() -> None:
    codes = {code for f in FILES for _, code in expected(f.read_text())}
    assert codes == set(CODES)
    assert {f.name for f in FILES} >= {"clean.py", "cell_clean.py"}


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_corpus_file(path: Path) -> None:
    text = path.read_text()
    analysis = analyze(text)
    assert analysis.error is None
    found = {(f.span.line, f.code) for f in analysis.findings}
    assert found == expected(text)
    for finding in analysis.findings:
        severity, _, fix = CODES[finding.code]
        assert finding.severity in (severity, "information")
        assert finding.fix in (fix, None)
        assert finding.message


def test_durable_functions_and_steps() -> None:
    analysis = analyze((CORPUS / "clean.py").read_text())
    names = [(f.qualname, f.explicit, f.is_async) for f in analysis.functions]
    assert names == [("sync_customer", "clean.sync", False), ("fan_out", None, True)]
    sync = analysis.functions[0]
    assert [(s.kind, s.name, s.straight) for s in sync.steps] == [
        ("step", "fetch_user", True),
        ("step", "when", True),
        ("step", "choice", True),
        ("marker", "slack", True),
    ]
    fetch = sync.steps[0]
    assert (fetch.name_span.line, fetch.name_span.col, fetch.name_span.end_col) == (19, 11, 15)
    assert site_at(analysis, 19, 20) == fetch
    assert site_at(analysis, 0, 0) is None
    assert function_at(analysis, 20) == sync
    assert sync.name_span.line == 18 and sync.span.line == 17  # the name; span from @durable
    assert [s.straight for s in analysis.functions[1].steps] == [False]  # in a comprehension


def test_cell_is_a_durable_context() -> None:
    analysis = analyze((CORPUS / "cell_clean.py").read_text())
    assert analysis.cell == "report"
    assert [(f.qualname, [s.name for s in f.steps]) for f in analysis.functions] == [
        ("report", ["load", "sum"])
    ]


def test_nested_qualnames_and_syntax_errors() -> None:
    source = "class A:\n    def m(self):\n        def inner():\n            pass\n"
    assert enclosing_def(source, 3) == "A.m.<locals>.inner"
    assert enclosing_def(source, 1) == "A.m"
    assert enclosing_def("x = 1\n", 0) is None
    broken = analyze("@durable\ndef f(:\n")
    assert broken.error is not None and "line 2" in broken.error and broken.findings == ()


def test_non_ascii_columns_in_findings() -> None:
    # "é" is 2 UTF-8 bytes (ast's unit) and 1 code point; "🎉" is 4 bytes, 1 code point and
    # 2 UTF-16 units (the LSP default).
    source = (
        "import time\nfrom letitloop import durable\n\n@durable\ndef f():\n"
        '    x = ("é🎉", time.time())\n'
    )
    (finding,) = analyze(source).findings
    line = source.splitlines()[5]
    assert line[finding.span.col : finding.span.end_col] == "time.time()"
    assert char_to_utf16(line, finding.span.col) == finding.span.col + 1


def test_column_conversions() -> None:
    line = "a = 'é🎉' + b"
    b_col = line.index("b")  # 12 code points
    assert byte_to_char(line, len(line[:b_col].encode())) == b_col
    assert char_to_utf16(line, b_col) == b_col + 1
    assert utf16_to_char(line, b_col + 1) == b_col
    assert byte_to_utf16(line, len(line[:b_col].encode())) == b_col + 1
    assert utf16_to_char(line, 999) == len(line)
    for encoding in ("utf-8", "utf-16", "utf-32"):
        for col in range(len(line) + 1):
            assert from_encoding(line, to_encoding(line, col, encoding), encoding) == col
    assert to_encoding(line, b_col, "utf-8") == len(line[:b_col].encode())
    assert to_encoding(line, b_col, "utf-32") == b_col


TRICKY = '''"""Module docstring
at column 0, with code-like lines:
def not_a_function():
    pass
"""
import time
from letitloop import durable, step

TEMPLATE = \'\'\'
@durable
def fake(): time.time()
\'\'\'

if time:
    x = 1
else:
    x = 2

VALUE = max(
1, 2
)


@durable
def flow():
    started = time.time()
    return step("s", len, TEMPLATE) + VALUE
'''


@pytest.mark.parametrize(
    "text",
    [TRICKY, *[f.read_text() for f in FILES]],
    ids=["tricky", *[f.stem for f in FILES]],
)
def test_statement_chunks_give_the_same_analysis_as_one_parse(text: str) -> None:
    """analyze() caches each top-level statement apart; the result must equal analysing the
    whole text at once, including where the guessed statement starts are wrong."""
    from letitloop.lsp import _analysis

    chunked = analyze(text)
    masked, cell = _analysis.mask_cell(text)
    whole = _analysis._visit(
        __import__("ast").parse(masked).body, masked.splitlines(), 0, cell, (), frozenset()
    )
    kept = [
        f for where, f in whole.orphans if where is None or where.split(".")[-1] not in whole.called
    ]
    expected = sorted((f.span, f.code) for f in [*whole.findings, *kept])
    assert sorted((f.span, f.code) for f in chunked.findings) == expected
    assert [(f.qualname, f.span, f.steps) for f in chunked.functions if f.qualname != cell] == [
        (f.qualname, f.span, f.steps) for f in whole.functions
    ]


def test_editing_reuses_unchanged_statements() -> None:
    text = (CORPUS / "lil001_nondeterministic.py").read_text()
    first = analyze(text)
    moved = analyze("# a new first line\n" + text)
    assert [f.span.line + 1 for f in first.findings] == [f.span.line for f in moved.findings]
    assert [f.code for f in first.findings] == [f.code for f in moved.findings]
    tricky = analyze(TRICKY)
    assert [(f.code, f.span.line) for f in tricky.findings] == [("LIL001", 25)]
    assert [f.qualname for f in tricky.functions] == ["flow"]


def test_docs_table_lists_every_code() -> None:
    from letitloop.lsp._journal_view import JOURNAL_CODES

    docs = (Path(__file__).resolve().parents[2] / "docs" / "editors.md").read_text()
    rows = set(re.findall(r"^\| `(LIL\d{3})` \| (\w+)", docs, re.M))
    assert {code for code, _ in rows} == set(CODES) | set(JOURNAL_CODES)
    for code, severity in rows:
        expected = CODES[code][0] if code in CODES else JOURNAL_CODES[code][0]
        assert severity == expected, code


def test_pure_modules_import_no_pygls_and_no_journal() -> None:
    """The analysis, positions, actions and journal view stay importable (and testable)
    without pygls, lsprotocol, libcst or the journal client."""
    from tests.conftest import modules_after

    loaded = modules_after(
        "import letitloop.lsp, letitloop.lsp._analysis, letitloop.lsp._positions, "
        "letitloop.lsp._actions, letitloop.lsp._journal_view"
    )
    heavy = ["pygls", "lsprotocol", "libcst", "duckdb", "click", "letitloop.journal.duckdb._client"]
    assert [m for m in heavy if m in loaded] == []


def test_a_durable_cell_rewritten_by_jupyterlab_lsp_is_analysed_as_the_cell() -> None:
    """jupyterlab-lsp hands a ``%%durable`` cell over as ``run_cell_magic`` with the body in a
    string (the first body line on the call's line): findings land on the body's calls."""
    from letitloop.lsp._analysis import analyze

    src = (
        'get_ipython().run_cell_magic("durable", " fetch", """t = time.time()\n'
        'import time\nu = step("a", lambda: time.time())\nv = time.time()\n""")\n'
    )
    found = analyze(src)
    assert found.error is None and found.cell == "fetch"
    lines = src.splitlines()
    marked = [(f.code, lines[f.span.line][f.span.col : f.span.end_col]) for f in found.findings]
    assert marked == [("LIL001", "time.time()"), ("LIL001", "time.time()")]
    assert [f.span.line for f in found.findings] == [0, 3]  # not the one inside the step
    (site,) = found.sites
    assert lines[site.span.line][site.span.col :].startswith('step("a"')


def test_a_durable_cell_from_the_lab_extension_is_analysed_in_place() -> None:
    """The lab extension hands a ``%%durable`` cell to jupyterlab-lsp's servers as a document
    of its own with the magic as a same-length comment (``#%durable NAME``): the cell's name
    and every position are the cell's own, so marks land where the user sees the code."""
    from letitloop.lsp._analysis import analyze

    cell = "%%durable fetch --fresh\nimport time\nu = step('a', lambda: 1)\nv = time.time()\n"
    lab = cell.replace("%%durable", "#%durable", 1)
    found = analyze(lab)
    assert found.error is None and found.cell == "fetch"
    assert analyze(cell)._replace(cell=None) == found._replace(cell=None)
    lines = lab.splitlines()
    marked = [
        (f.code, f.span.line, lines[f.span.line][f.span.col : f.span.end_col])
        for f in found.findings
    ]
    assert marked == [("LIL001", 3, "time.time()")]
    assert [(s.name, s.span.line, s.span.col) for s in found.sites] == [("a", 2, 4)]
    assert analyze("#%durables x\nimport time\nv = time.time()\n").cell is None
