"""``lil runs show``'s blackboard section: each key at its newest version, then the agents'
threads as conversations (what ``letitloop.operate`` reads; values previewed, never run)."""

from __future__ import annotations

from letitloop.cli import _output as out
from letitloop.operate import RunView, turn_line


def show_board(view: RunView) -> None:
    """The run's blackboard and conversations, if it has any."""
    if view.board:
        out.say("")
        out.say(out.text("blackboard:", "bold"))
        table = out.make_table("key", "version", "tags", "by", "value", right=("version",))
        for k in view.board:
            pin = " (pinned)" if k.pinned else ""
            table.add_row(
                out.text(k.key + pin),
                f"v{k.version}" + (f" of {k.versions}" if k.versions > 1 else ""),
                out.text(", ".join(k.tags) or "-"),
                out.text(k.by),
                out.text(out.one_line(k.preview, 60)),
            )
        out.say(table)
    for c in view.conversations:
        out.say("")
        out.say(out.text(f"conversation {c.name!r} ({len(c.turns)} turns):", "bold"))
        for t in c.turns:
            style = "yellow" if t.kind == "handoff" else ""
            out.say(out.text(f"  {t.version:>3}  {turn_line(t)}", style))
