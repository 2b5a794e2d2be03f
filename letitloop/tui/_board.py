"""The run screen's blackboard section: keys at their newest versions and the agents' threads
as conversations (operate's run view has read them; values previewed, never run)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from letitloop.operate import RunView, one_line, turn_line


def board_section(view: RunView) -> RenderableType | None:
    """The section, or None for a run without a blackboard."""
    if not view.board and not view.conversations:
        return None
    parts: list[RenderableType] = [Text("\nblackboard", "bold")]
    for k in view.board:
        line = Text(f"  {k.key}", "bold" if k.pinned else "")
        line.append(f"  v{k.version}" + (" pinned" if k.pinned else ""), "cyan")
        line.append(f"  {one_line(k.preview, 60)}")
        parts.append(line)
    for c in view.conversations:
        parts.append(Text(f"\nconversation {c.name} ({len(c.turns)} turns)", "bold"))
        for t in c.turns:
            style = "yellow" if t.kind == "handoff" else ""
            parts.append(Text(f"  {t.version:>3}  {turn_line(t)}", style))
    return Group(*parts)
