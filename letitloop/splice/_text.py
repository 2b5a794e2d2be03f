"""Plain-text helpers the splicer works with: lines, offsets, edits and unified diffs.

The splicer never regenerates a file from a syntax tree. It computes character offsets with
libcst and then edits the original text, so every byte outside an edit stays as it was. Lines
are split exactly as libcst and the Python tokenizer split them: on ``\\r\\n``, ``\\r`` or
``\\n`` (``str.splitlines`` would also split on form feeds and ``\\u2028``, which Python does
not). This module does not import libcst.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_right
from collections.abc import Iterable
from typing import NamedTuple

NEWLINE_RE = re.compile(r"\r\n?|\n")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+$")
INDENT_CHARS = " \t\x0c"


class Edit(NamedTuple):
    """Replace ``source[start:end]`` with ``text``."""

    start: int
    end: int
    text: str


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, each with its own line ending (the last may have none)."""
    return _LINE_RE.findall(text)


def ends_with_newline(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def first_newline(text: str, default: str = "\n") -> str:
    match = NEWLINE_RE.search(text)
    return match.group() if match else default


def is_blank(line: str) -> bool:
    """True for a line holding only spaces, tabs, form feeds and its line ending."""
    return not line.strip(INDENT_CHARS + "\r\n")


def leading_ws(line: str) -> str:
    return line[: len(line) - len(line.lstrip(INDENT_CHARS))]


class LineTable:
    """Offsets of line starts in a text: 1-based lines and 0-based columns, as libcst reports.

    Columns count code points, which are Python string indices.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in NEWLINE_RE.finditer(text)]

    @property
    def count(self) -> int:
        """The number of lines (a final line without a line ending counts)."""
        n = len(self.starts)
        return n - 1 if self.starts[-1] == len(self.text) else n

    def start(self, line: int) -> int:
        """Offset where ``line`` starts; lines past the end map to the end of the text."""
        if line < 1:
            return 0
        return self.starts[line - 1] if line <= len(self.starts) else len(self.text)

    def offset(self, line: int, column: int) -> int:
        return min(self.start(line) + column, len(self.text))

    def line_of(self, offset: int) -> int:
        """The 1-based line holding ``offset``."""
        return bisect_right(self.starts, offset)

    def line_text(self, line: int) -> str:
        """Line ``line`` with its line ending."""
        return self.text[self.start(line) : self.start(line + 1)]

    def blank(self, line: int) -> bool:
        return is_blank(self.line_text(line))

    def blank_run_before(self, offset: int) -> int:
        """Where the run of blank lines that ends at ``offset`` (a line start) begins."""
        line = self.line_of(offset)
        while line > 1 and self.blank(line - 1):
            line -= 1
        return min(self.start(line), offset)

    def blank_run_after(self, offset: int) -> int:
        """Where the run of blank lines that starts at ``offset`` (a line start) ends."""
        line = self.line_of(offset)
        while self.start(line) < len(self.text) and self.blank(line):
            line += 1
        return max(self.start(line), offset)

    def gap_before(self, offset: int) -> int:
        """How many blank lines come right before the line starting at ``offset``."""
        line, n = self.line_of(offset), 0
        while line - n > 1 and self.blank(line - n - 1):
            n += 1
        return n


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (given in any order) to ``source``."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.start < before.end:
            raise ValueError(f"overlapping edits: {before} and {after}")
    parts, pos = [], 0
    for edit in ordered:
        parts += [source[pos : edit.start], edit.text]
        pos = edit.end
    parts.append(source[pos:])
    return "".join(parts)


def unified_diff(before: str, after: str, path: str = "source.py", context: int = 3) -> str:
    """A ``git diff``-style unified diff; line endings are kept as they are in the text, and a
    last line without one is marked ``\\ No newline at end of file``."""
    if before == after:
        return ""
    out = []
    lines = difflib.unified_diff(
        split_lines(before),
        split_lines(after),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
        n=context,
        lineterm="\n",
    )
    for line in lines:
        if ends_with_newline(line):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def indent_lines(text: str, prefix: str, keep: Iterable[int] = (), base: str = "") -> str:
    """``text`` with ``prefix`` inserted after ``base`` on every line that starts with ``base``
    (before the line otherwise). Blank lines and the 1-based lines in ``keep`` (continuation
    lines of multi-line strings) stay as they are."""
    kept = set(keep)
    out = []
    for n, line in enumerate(split_lines(text), start=1):
        if n in kept or is_blank(line):
            out.append(line)
        elif line.startswith(base):
            out.append(base + prefix + line[len(base) :])
        else:
            out.append(prefix + line)
    return "".join(out)


def string_literal(value: str) -> str:
    """A double-quoted Python literal for ``value`` (the style ruff and black write)."""
    if '"' not in value and "\\" not in value and value.isprintable():
        return f'"{value}"'
    return repr(value)
