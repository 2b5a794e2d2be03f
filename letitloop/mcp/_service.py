"""What every tool call needs: the journal (opened on first use), the project it serves, what the
user allowed, and the bounds every answer keeps (pages, cursors, long texts cut, one size cap).

An agent's context is small: pages are small by default and every answer says how to read on
(``next_cursor``, ``next_offset``); no answer is over ``Limits.max_result`` characters of JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from letitloop import operate
from letitloop.mcp._options import Limits, Settings
from letitloop.mcp._tools import BadArguments

if TYPE_CHECKING:
    from letitloop.journal import Journal

MAX_TEXT = 2000  # characters of any one text inside an answer (a traceback, a payload's string)
MAX_ITEMS = 50  # items of any one list inside a record (a payload's list)
MAX_OFFSET = 100_000  # how deep a cursor may page


@dataclass
class Service:
    """The journal, the project root, the user's settings and the server's bounds."""

    spec: str | None  # the journal as given (--journal), else found from the project
    root: Path
    settings: Settings
    limits: Limits = field(default_factory=Limits)

    @operate.journal_once
    def journal(self) -> Journal:
        from letitloop.journal import find_location, open_journal

        found = find_location(self.spec, self.root)
        if not isinstance(found, str) and not found.exists():
            from letitloop.errors import ConfigError

            raise ConfigError(
                f"no journal at {found} yet (found from {self.root})",
                fix="run a durable workflow in this project first, or start lil mcp "
                "with --journal PATH_OR_URL",
            )
        return open_journal(found)

    def inside(self, path: str, what: str) -> Path:
        """``path`` (relative to the project root, or absolute inside it) resolved; anything
        outside the project is refused."""
        root = self.root.resolve()
        target = (root / path).resolve()
        if target != root and root not in target.parents:
            raise BadArguments(
                f"the {what} {path[:200]!r} is outside the project {root}",
                fix="give a path inside the project, relative to its root",
            )
        return target


# -- pages and caps -------------------------------------------------------------------------------


def offset_of(cursor: str | None) -> int:
    """A cursor (the offset of the next page, as text) as a number."""
    if cursor in (None, ""):
        return 0
    assert cursor is not None
    if not cursor.isdigit() or int(cursor) > MAX_OFFSET:
        raise BadArguments(
            f"cursor {cursor[:20]!r} is not one this server gave",
            fix="pass the next_cursor of the page before, or leave cursor out",
        )
    return int(cursor)


def page(items: list[Any], offset: int, limit: int) -> tuple[list[Any], str | None]:
    """``limit`` items from ``offset``, and the cursor of the next page (None at the end)."""
    chosen = items[offset : offset + limit]
    more = len(items) > offset + limit
    return chosen, (str(offset + limit) if more else None)


def shrink(value: Any, most: int = MAX_TEXT) -> Any:
    """A copy of JSON data whose every text is at most ``most`` characters (saying how many were
    cut) and every list at most ``MAX_ITEMS`` items: no one field can flood an answer."""
    if isinstance(value, str):
        if len(value) <= most:
            return value
        return f"{value[:most]}… ({len(value) - most} more characters)"
    if isinstance(value, dict):
        return {str(k)[:200]: shrink(v, most) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [shrink(v, most) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"… ({len(value) - MAX_ITEMS} more items)")
        return items
    return value


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def fit(answer: dict[str, Any], key: str | None, offset: int, most: int) -> dict[str, Any]:
    """``answer`` within ``most`` characters of JSON: items of its page ``answer[key]`` are left
    for the next page (``next_cursor`` moves back) until it fits; an answer that still does not
    fit has its texts cut shorter."""
    if len(dumps(answer)) <= most:
        return answer
    if key is not None and isinstance(answer.get(key), list):
        items = list(answer[key])
        while len(items) > 1 and len(dumps(answer | {key: items})) > most:
            items = items[: max(1, len(items) // 2)]
        if len(items) < len(answer[key]):
            more: dict[str, Any] = {"truncated": True}
            if "next_cursor" in answer:
                more = {"next_cursor": str(offset + len(items))}
            answer = answer | {key: items} | more
    for cut in (500, 200, 60):
        if len(dumps(answer)) <= most:
            break
        answer = shrink(answer, cut)
    return answer
