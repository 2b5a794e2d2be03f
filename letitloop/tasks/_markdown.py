"""Markdown structure invariants an agent's edit must keep.

    headings       every heading of the file before the attempt is still there (same level)
    front_matter   a leading ``---`` block is closed and holds a YAML mapping
    links          relative links and images point at files that exist, and ``#anchors`` at
                   headings that exist (GitHub's slugs)
    fences         every ``` or ~~~ code fence is closed

Headings and links inside code fences are not structure and are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def problems(
    path: str, before: str | None, after: str, root: Path, rules: tuple[str, ...]
) -> list[str]:
    """What ``after`` (the file at ``path`` now) breaks of ``rules``; empty when nothing."""
    lines, unclosed = _outside_fences(after)
    found: list[str] = []
    if "fences" in rules and unclosed is not None:
        found.append(f"{path}: the code fence opened on line {unclosed} is never closed")
    if "front_matter" in rules:
        found += _front_matter(path, after)
    if "headings" in rules and before is not None:
        now = {h for h, _ in _headings(lines)}
        for heading, line in _headings(_outside_fences(before)[0]):
            if heading not in now:
                found.append(f"{path}: heading {heading!r} (line {line} before) was removed")
    if "links" in rules:
        found += _links(path, lines, root)
    return found


def _outside_fences(text: str) -> tuple[list[tuple[int, str]], int | None]:
    """(line number, line) of the lines outside code fences; the line of an unclosed fence."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    opened = 0
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence, opened = m.group(1), n
                continue
            out.append((n, line))
        elif (
            m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and not line.strip()[len(m.group(1)) :].strip()
        ):
            fence = None
    return out, (opened if fence is not None else None)


def _headings(lines: list[tuple[int, str]]) -> list[tuple[str, int]]:
    out = []
    for n, line in lines:
        m = _HEADING.match(line)
        if m:
            out.append((f"{m.group(1)} {m.group(2).strip()}", n))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _front_matter(path: str, text: str) -> list[str]:
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return []
    rest = text.split("\n", 1)[1]
    end = re.search(r"^(---|\.\.\.)\s*$", rest, re.M)
    if end is None:
        return [f"{path}: the front matter opened on line 1 is never closed with ---"]
    body = rest[: end.start()]
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:  # without PyYAML: each line must at least look like "key: value"
        bad = [ln for ln in body.splitlines() if ln.strip() and ":" not in ln and ln[0] != " "]
        return [f"{path}: front matter line {bad[0]!r} is not key: value"] if bad else []
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as exc:
        return [f"{path}: the front matter is not valid YAML: {str(exc).splitlines()[0]}"]
    if data is not None and not isinstance(data, dict):
        return [f"{path}: the front matter is YAML but not a mapping of keys to values"]
    return []


def _links(path: str, lines: list[tuple[int, str]], root: Path) -> list[str]:
    here = (root / path).parent
    found = []
    for n, line in lines:
        for m in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = m.group(1)
            if _SCHEME.match(target) or target.startswith("//"):
                continue  # a URL: not checked offline
            file_part, _, anchor = target.partition("#")
            file = (here / file_part).resolve() if file_part else root / path
            if file_part and not file.exists():
                found.append(f"{path}:{n}: link to {target!r}: {file_part} does not exist")
            elif anchor and file.suffix.lower() in (".md", ".markdown") and file.is_file():
                text = file.read_text(encoding="utf-8", errors="replace")
                anchors = {slug(h.split(" ", 1)[1]) for h, _ in _headings(_outside_fences(text)[0])}
                if anchor.lower() not in anchors:
                    found.append(f"{path}:{n}: link to {target!r}: no heading #{anchor}")
    return found
