"""Every code block of the docs that claims to run does: each ```python block of README.md,
docs/**/*.md and examples/*/README.md runs in a fresh interpreter and journal, and every `lil`
command line in a console, bash or text block names a real command with real options.

A Python fragment that is not meant to run alone is fenced ```py (the site highlights it the
same); anything else fenced ```python is a claim that it runs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts),
    *sorted((ROOT / "examples").glob("*/README.md")),
]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)  # its info string, its text


def _blocks(*infos: str) -> list[tuple[str, str, str]]:
    """(id, info string, text) of every fenced block whose info string is one of ``infos``
    (```` ```python smolagents ```` is not ```` ```python ````: the adapter tests run those in
    their framework's environment)."""
    return [
        (f"{path.relative_to(ROOT)}:{n}", match.group(1).strip(), match.group(2))
        for path in DOCS
        for n, match in enumerate(FENCE.finditer(path.read_text()))
        if match.group(1).strip() in infos
    ]


BLOCKS = [pytest.param(block, id=name) for name, _, block in _blocks("python")]


def test_docs_have_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("block", BLOCKS)
def test_doc_example_runs(block: str, tmp_path: Path) -> None:
    journal = tmp_path / "journal.duckdb"
    script = tmp_path / "example.py"
    script.write_text(block)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LIL_JOURNAL": str(journal)}
    try:
        out = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
        )
        assert out.returncode == 0, out.stderr
    finally:
        from tests.conftest import _kill_owner

        _kill_owner(journal)


def _command_lines() -> list[tuple[str, str]]:
    """`lil ...` and `lil-tui ...` lines of console and bash blocks (with or without a `$ `
    prompt), and `$ lil ...` lines of text and unmarked blocks (not diagrams that say lil)."""
    found = []
    for name, lang, block in _blocks("console", "bash", "sh", "text", ""):
        block = re.sub(r"\\\n\s*", " ", block)  # a command continued over lines is one line
        for line in block.splitlines():
            line = line.strip()
            prompted = line.startswith("$ ")
            line = line.removeprefix("$ ")
            if re.match(r"lil(-tui)?( |$)", line) and (
                prompted or lang in ("console", "bash", "sh")
            ):
                found.append((name, line))
    return found


COMMAND_LINES = [pytest.param(line, id=f"{name}:{line[:40]}") for name, line in _command_lines()]


def _check(line: str) -> None:
    """Walk `line`'s words down lil's commands as click would, and fail on a command or an option
    that does not exist. Placeholders (RUN, `[--root DIR]`) pass; after `|` an alternative is
    checked as what it stands beside: a sibling command (`lil cache list | clear`), another option
    (`--done|--redo`) or a new `lil` line."""
    from letitloop.cli import lil

    lexer = shlex.shlex(
        line.replace("[", " ").replace("]", " "), posix=True, punctuation_chars="|<>"
    )
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = ["tui" if w == "lil-tui" else w for w in lexer]
    words = ["lil", *words] if words[0] == "tui" else words
    ctx = click.Context(lil, info_name="lil")
    chain: list[click.Command] = []
    last = ""  # what the previous word was: command, option, positional
    skip = 0
    alternative = False
    for word in words:
        if skip:
            skip -= 1
            continue
        if word in ("<", ">", "--"):
            return  # a redirection, or another program's arguments
        if word == "|":
            alternative = True
            continue
        if word == "lil":
            chain, last, alternative = [lil], "command", False
            continue
        command = chain[-1]
        if word.startswith("-") and word != "-":
            if last == "positional" and _takes_rest(command):
                return  # `lil watch script.py --day 2`: the script's own options
            option = next(
                (p for c in chain for p in c.params if word.split("=")[0] in p.opts), None
            )
            where = " ".join(c.name or "" for c in chain)
            assert option is not None, f"`{line}`: `{where}` has no option {word}"
            if isinstance(option, click.Option) and not option.is_flag and not option.count:
                skip = 0 if "=" in word else max(option.nargs, 1)
            last, alternative = "option", False
            continue
        if alternative and last == "command" and len(chain) > 1:
            sibling = _sub(chain[-2], ctx, word)
            assert sibling is not None, f"`{line}`: no command {word!r} under {chain[-2].name}"
            chain[-1], alternative = sibling, False
            continue
        alternative = False
        sub = _sub(command, ctx, word) if last != "positional" else None
        if sub is not None:
            chain.append(sub)
            last = "command"
            continue
        takes = any(isinstance(p, click.Argument) for p in command.params)
        assert takes or not isinstance(command, click.Group), (
            f"`{line}`: no command {word!r} under {command.name}"
        )
        assert takes, f"`{line}`: {command.name} takes no argument, got {word!r}"
        last = "positional"


def _sub(command: click.Command, ctx: click.Context, word: str) -> click.Command | None:
    return command.get_command(ctx, word) if isinstance(command, click.Group) else None


def _takes_rest(command: click.Command) -> bool:
    return any(isinstance(p, click.Argument) and p.nargs == -1 for p in command.params)


def test_docs_show_lil_commands() -> None:
    assert len(COMMAND_LINES) >= 50


@pytest.mark.parametrize("line", COMMAND_LINES)
def test_doc_command_line_exists(line: str) -> None:
    _check(line)


@pytest.mark.parametrize(
    "line",
    [
        "lil runs resme RUN",
        "lil runs list --stauts failed",
        "lil approvals list | shw",
        "lil effects resolve RUN MARKER --done|--redone",
        "lil-tui --jurnal x",
    ],
)
def test_a_wrong_command_line_is_caught(line: str) -> None:
    with pytest.raises(AssertionError):
        _check(line)
