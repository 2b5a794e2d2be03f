"""A run's blackboard as people see it: each key at its newest version, and the agents' threads
as conversations (``letitloop.memory``'s ``thread/<name>`` keys, handoffs included).

Values are previewed, never decoded (no user code runs): a thread's turn written as JSON shows
its agent and text; any other value its preview. ``lil runs show``, lil-tui's run screen and
the lab's run panel show these.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from letitloop.journal import BoardEntry, BoardView

THREAD = "thread/"
MAX_PREVIEW = 2000  # characters of one value or turn shown


class BoardKey(NamedTuple):
    """One key of a run's blackboard: its newest version and how many it has had."""

    key: str
    version: int
    versions: int
    tags: tuple[str, ...]
    pinned: bool
    by: str
    ts: float
    preview: str


class Turn(NamedTuple):
    """One turn of a conversation: its version on the board, who said it, and what."""

    version: int
    agent: str
    role: str
    kind: str  # turn | handoff
    to: str | None  # a handoff's next role
    text: str
    ts: float


class Conversation(NamedTuple):
    """An agents' thread (the board key ``thread/<name>``), oldest turn first."""

    name: str
    turns: list[Turn]


def board_keys(view: BoardView) -> list[BoardKey]:
    """Each key at its newest version, in the order the keys were first written."""
    from letitloop.journal import preview

    order: dict[str, list[BoardEntry]] = {}
    for e in view.entries:
        order.setdefault(e.key, []).append(e)
    keys = []
    for key, versions in order.items():
        head = max(versions, key=lambda e: e.version)
        shown = preview(head.codec, head.output, limit=MAX_PREVIEW)
        keys.append(
            BoardKey(
                key, head.version, len(versions), head.tags, head.pinned, head.by, head.ts, shown
            )
        )
    return keys


def conversations(view: BoardView) -> list[Conversation]:
    """The threads on the board, each as its turns in version order."""
    threads: dict[str, list[Turn]] = {}
    for e in sorted(view.entries, key=lambda e: (e.key, e.version)):
        if e.key.startswith(THREAD):
            threads.setdefault(e.key[len(THREAD) :], []).append(_turn(e))
    return [Conversation(name, turns) for name, turns in threads.items()]


def _turn(e: BoardEntry) -> Turn:
    """A turn from its entry: JSON is read as data (never code), anything else previewed."""
    value: Any = None
    if e.codec == "json":
        try:
            value = json.loads(e.output)
        except (ValueError, RecursionError):
            value = None
    if not isinstance(value, dict):
        from letitloop.journal import preview

        return Turn(e.version, "", "", "turn", None, preview(e.codec, e.output), e.ts)
    content = value.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    to = value.get("to")
    return Turn(
        e.version,
        str(value.get("agent") or ""),
        str(value.get("role") or "assistant"),
        "handoff" if value.get("kind") == "handoff" else "turn",
        str(to) if to is not None else None,
        text[:MAX_PREVIEW],
        e.ts,
    )


def board_key_json(k: BoardKey) -> dict[str, Any]:
    """A blackboard key as every JSON surface writes it."""
    return {
        "key": k.key,
        "version": k.version,
        "versions": k.versions,
        "tags": list(k.tags),
        "pinned": k.pinned,
        "by": k.by,
        "ts": k.ts,
        "preview": k.preview,
    }


def conversation_json(c: Conversation) -> dict[str, Any]:
    """A conversation as every JSON surface writes it."""
    return {
        "name": c.name,
        "turns": [
            {
                "version": t.version,
                "agent": t.agent,
                "role": t.role,
                "kind": t.kind,
                "to": t.to,
                "text": t.text,
                "ts": t.ts,
            }
            for t in c.turns
        ],
    }


def turn_line(t: Turn) -> str:
    """A turn as one line of a conversation: ``writer: ...`` or ``critic → editor: ...``."""
    from letitloop.operate._format import one_line

    who = t.agent or t.role
    if t.kind == "handoff":
        who = f"{who} → {t.to}" if t.to else f"{who} (handoff)"
    return f"{who}: {one_line(t.text, 200)}"
