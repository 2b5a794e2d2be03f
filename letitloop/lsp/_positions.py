"""Column conversions between Python's AST (UTF-8 byte offsets), libcst and plain ``str``
indexing (code points), and LSP positions (UTF-16 code units by default).

A line of ASCII has the same column in all three; a line with ``é`` or an emoji does not, and
a diagnostic or edit computed in one unit but sent in another lands on the wrong character.
Every position the server sends or receives goes through these few functions.
"""

from __future__ import annotations

from typing import NamedTuple


class Span(NamedTuple):
    """A range in a document: 0-based lines, columns in code points (``str`` indices)."""

    line: int
    col: int
    end_line: int
    end_col: int


def byte_to_char(line: str, byte_col: int) -> int:
    """The code-point column of a UTF-8 byte offset into ``line`` (how ``ast`` counts)."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def char_to_utf16(line: str, col: int) -> int:
    """The UTF-16 code-unit column of code-point column ``col`` (characters beyond the BMP,
    such as emoji, count twice)."""
    if line.isascii():
        return col
    prefix = line[:col]
    return col + sum(1 for ch in prefix if ord(ch) > 0xFFFF)


def utf16_to_char(line: str, units: int) -> int:
    """The code-point column of a UTF-16 column (clamped to the line's length)."""
    if line.isascii():
        return min(units, len(line))
    count = 0
    for index, ch in enumerate(line):
        if count >= units:
            return index
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


def byte_to_utf16(line: str, byte_col: int) -> int:
    """An ``ast`` column (UTF-8 bytes) as an LSP column (UTF-16 units)."""
    return char_to_utf16(line, byte_to_char(line, byte_col))


def to_encoding(line: str, col: int, encoding: str) -> int:
    """A code-point column in the position encoding the client negotiated
    (``utf-16``, the default, ``utf-8`` or ``utf-32``)."""
    if encoding == "utf-32":
        return col
    if encoding == "utf-8":
        return len(line[:col].encode("utf-8"))
    return char_to_utf16(line, col)


def from_encoding(line: str, units: int, encoding: str) -> int:
    """A column in the negotiated encoding as a code-point column."""
    if encoding == "utf-32":
        return min(units, len(line))
    if encoding == "utf-8":
        return byte_to_char(line, units)
    return utf16_to_char(line, units)


def line_at(lines: list[str], index: int) -> str:
    """Line ``index`` of a document without its line break, or ``""`` past the end."""
    if 0 <= index < len(lines):
        return lines[index].rstrip("\r\n")
    return ""
