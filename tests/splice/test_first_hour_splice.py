"""Issue 15, point 17: what a new user hit with the splicer on a third-party file.

Trailing body comments survive a replacement (CPython's own ``textwrap.py`` as the fixture),
the did-you-mean fix names the command that lists targets, diffs are labelled relative to
the working directory, a closed pipe ends a dry run quietly, and a renaming replacement needs
``--rename``.
"""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import Result

from letitloop.splice import DefinitionRenamedError, TargetNotFoundError, replace
from tests.helpers import child_env, invoke_lil, lil_command

ROOT = Path(__file__).resolve().parents[2]
TEXTWRAP = ROOT / "tests" / "data" / "splice" / "replace_keeps_trailing_comments_textwrap"
TARGET = "TextWrapper._handle_long_word"
TRAILING = [
    "        # If we're not allowed to break long words, and there's already",
    "        # text on the current line, do nothing.  Next time through the",
    "        # main loop of _wrap_chunks(), we'll wind up here again, but",
    "        # cur_len will be zero, so the next line will be entirely",
    "        # devoted to the long word that we can't handle right now.",
]


def textwrap_source() -> str:
    return (TEXTWRAP / "before.py").read_text(encoding="utf-8")


def ast_text(source: str, qualname: str) -> str:
    """The definition's lines as Python's AST delimits them (through its last statement):
    the text a tool that copies "the function" from an AST or a traceback produces."""
    cls_name, name = qualname.split(".")
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)
    assert fn.end_lineno is not None
    return "".join(source.splitlines(keepends=True)[fn.lineno - 1 : fn.end_lineno])


def test_the_fixture_is_this_interpreters_textwrap() -> None:
    import textwrap

    assert textwrap_source() == Path(textwrap.__file__).read_text(encoding="utf-8")
    lines = textwrap_source().splitlines()
    start = lines.index(TRAILING[0])
    assert lines[start : start + 5] == TRAILING


def test_replacing_handle_long_word_with_its_own_text_changes_nothing() -> None:
    source = textwrap_source()
    result = replace(source, TARGET, ast_text(source, TARGET))
    assert result.unchanged, result.diff
    assert result.diff == ""


def test_an_edited_body_keeps_the_five_trailing_comment_lines() -> None:
    source = textwrap_source()
    new = ast_text(source, TARGET).replace("space_left = 1", "space_left = 2")
    result = replace(source, TARGET, new)
    lines = result.source.splitlines()
    assert "            space_left = 2" in lines
    last = lines.index("            cur_line.append(reversed_chunks.pop())")
    assert lines[last + 1] == ""
    assert lines[last + 2 : last + 7] == TRAILING
    assert lines[last + 7] == ""
    assert lines[last + 8] == "    def _wrap_chunks(self, chunks):"
    changes = [line for line in result.diff.splitlines()[2:] if line[:1] in "+-"]
    assert changes == ["-            space_left = 1", "+            space_left = 2"]


def test_trailing_comments_of_the_new_code_replace_the_old_ones() -> None:
    source = (
        "class A:\n    def f(self):\n        return 1\n        # old note\n\n"
        "    def g(self):\n        pass\n"
    )
    new = "def f(self):\n    return 2\n    # new note\n"
    result = replace(source, "A.f", new)
    assert "# new note" in result.source and "# old note" not in result.source
    kept = replace(source, "A.f", "def f(self):\n    return 2\n")
    assert kept.source == source.replace("return 1", "return 2")


def test_comments_indented_deeper_or_shallower_are_not_trailing_body_comments() -> None:
    """A comment inside the last branch belongs to that branch (replaced with the body); a
    flush-left comment after the method belongs to the class, and stays where it is."""
    source = (
        "class A:\n    def f(self, x):\n        if x:\n            return 1\n"
        "            # inside the branch\n# flush left\n\n    def g(self):\n        pass\n"
    )
    result = replace(source, "A.f", "def f(self, x):\n    return 3\n")
    assert "inside the branch" not in result.source
    assert "# flush left\n" in result.source


def run(*args: str) -> Result:
    """``lil splice ARGS`` in this process."""
    return invoke_lil("splice", *args)


@pytest.fixture
def tw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """textwrap.py copied into tmp/pkg/, with tmp as the working directory."""
    (tmp_path / "pkg").mkdir()
    path = tmp_path / "pkg" / "textwrap.py"
    path.write_text(textwrap_source(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return path


def test_the_cli_keeps_the_trailing_comments(tw: Path, tmp_path: Path) -> None:
    new = tmp_path / "new.py"
    new.write_text(ast_text(textwrap_source(), TARGET).replace("= 1\n", "= 2\n", 1))
    result = run("replace", str(tw), TARGET, "--with", str(new))
    assert result.exit_code == 0, result.output
    text = tw.read_text(encoding="utf-8")
    assert "\n".join(TRAILING) in text
    assert "space_left = 2" in text


def test_did_you_mean_names_lil_splice_targets(tw: Path) -> None:
    with pytest.raises(TargetNotFoundError) as info:
        replace(textwrap_source(), "TextWrapper._handle_long_wrd", "def x(): pass\n")
    assert "`lil splice targets FILE`" in (info.value.fix or "")
    assert "splice list" not in (info.value.fix or "")
    result = run("source", str(tw), "TextWrapper._handle_long_wrd")
    assert result.exit_code == 1
    assert "did you mean 'TextWrapper._handle_long_word'" in result.stderr
    assert "lil splice targets FILE" in result.stderr


def test_diffs_are_labelled_relative_to_the_working_directory(tw: Path, tmp_path: Path) -> None:
    new = tmp_path / "new.py"
    new.write_text(ast_text(textwrap_source(), TARGET).replace("= 1\n", "= 2\n", 1))
    assert tw.is_absolute()
    result = run("replace", str(tw), TARGET, "--with", str(new), "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("--- a/pkg/textwrap.py\n+++ b/pkg/textwrap.py\n")
    result = run("replace", "pkg/../pkg/textwrap.py", TARGET, "--with", "new.py", "--json")
    assert '"diff": "--- a/pkg/textwrap.py' in result.stdout


def test_a_renaming_replacement_needs_rename(tw: Path, tmp_path: Path) -> None:
    new = tmp_path / "new.py"
    new.write_text("def fill_text(self, text):\n    return text\n")
    before = tw.read_bytes()
    refused = run("replace", str(tw), "TextWrapper.fill", "--with", str(new))
    assert refused.exit_code == 1
    assert "renames TextWrapper.fill to TextWrapper.fill_text" in refused.stderr
    assert "--rename" in refused.stderr
    assert tw.read_bytes() == before
    dry = run("replace", str(tw), "TextWrapper.fill", "--with", str(new), "--dry-run")
    assert dry.exit_code == 0
    assert "+    def fill_text(self, text):" in dry.stdout
    assert "warning: the new code renames TextWrapper.fill" in dry.stderr
    assert tw.read_bytes() == before
    done = run("replace", str(tw), "TextWrapper.fill", "--with", str(new), "--rename")
    assert done.exit_code == 0, done.output
    assert "def fill_text(self, text):" in tw.read_text(encoding="utf-8")
    assert "warning" not in done.stderr
    with pytest.raises(DefinitionRenamedError) as info:
        replace(textwrap_source(), "TextWrapper.fill", new.read_text(), rename=False)
    assert (info.value.old, info.value.new) == ("TextWrapper.fill", "TextWrapper.fill_text")


def test_a_closed_pipe_ends_a_dry_run_quietly(tw: Path, tmp_path: Path) -> None:
    """``lil splice ... --dry-run | head``: the reader is gone before the diff is written.
    The read end is closed before the command starts, so its first write meets EPIPE."""
    new = tmp_path / "new.py"
    new.write_text(ast_text(textwrap_source(), TARGET).replace("= 1\n", "= 2\n", 1))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [*lil_command(), "splice", "replace", str(tw), TARGET, "--with", str(new), "--dry-run"],
            env=child_env(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == 0
