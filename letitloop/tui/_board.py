"""The run screen's blackboard section: keys at their newest versions and the agents' threads
as conversations (read through ``letitloop.operate``; values previewed, never run)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from letitloop.operate import board_keys, conversations, one_line, turn_line


def board_section(journal: Any, run_id: str) -> RenderableType | None:
    """The section, or None for a run without a blackboard."""
    view = journal.board(run_id, history=True)
    if not view.entries:
        return None
    parts: list[RenderableType] = [Text("\nblackboard", "bold")]
    for k in board_keys(view):
        line = Text(f"  {k.key}", "bold" if k.pinned else "")
        line.append(f"  v{k.version}" + (" pinned" if k.pinned else ""), "cyan")
        line.append(f"  {one_line(k.preview, 60)}")
        parts.append(line)
    for c in conversations(view):
        parts.append(Text(f"\nconversation {c.name} ({len(c.turns)} turns)", "bold"))
        for t in c.turns:
            style = "yellow" if t.kind == "handoff" else ""
            parts.append(Text(f"  {t.version:>3}  {turn_line(t)}", style))
    return Group(*parts)
