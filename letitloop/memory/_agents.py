"""Agents sharing a conversation: threads of turns and handoffs, on the run's blackboard.

``agents.thread("review")`` is the blackboard key ``thread/review``: each turn an agent says is
the key's next version (``{"agent", "role", "content"}``, tagged ``thread``), so the thread is
append-only, journaled and replayed like every board write, and any agent (a child run, another
process) appends to the same one. ``thread.turns()`` reads it back; ``context.thread("review")``
makes it a context source. ``handoff(to="writer", note=...)`` pins a note for the next role on
the board (``handoff/writer``) and, given a thread, says it there too. ``lil runs show``, lil-tui
and the lab show threads as conversations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from letitloop.memory._board import Blackboard, Entry, blackboard

THREAD_PREFIX = "thread/"
HANDOFF_PREFIX = "handoff/"


@dataclass(frozen=True)
class Turn:
    """One turn of a thread: who said it, in which role, what, and its version on the board."""

    agent: str
    role: str
    content: Any
    version: int
    kind: str = "turn"  # or "handoff"

    @classmethod
    def of(cls, entry: Entry) -> Turn:
        v = entry.value if isinstance(entry.value, dict) else {"content": entry.value}
        return cls(
            str(v.get("agent") or ""),
            str(v.get("role") or "assistant"),
            v.get("content"),
            entry.version,
            str(v.get("kind") or "turn"),
        )


class Thread:
    """A named conversation on the blackboard that agents append their turns to."""

    def __init__(self, name: str, board: Blackboard | None = None) -> None:
        self.name = name
        self.key = THREAD_PREFIX + name
        self._board = board

    @property
    def board(self) -> Blackboard:
        return self._board or blackboard()

    def say(self, agent: str, content: Any, *, role: str = "assistant") -> Turn:
        """Append ``agent``'s turn (its next version on the board, after anyone's)."""
        entry = self.board.put(
            self.key,
            {"agent": agent, "role": role, "content": content},
            tags=("thread", f"thread:{self.name}"),
        )
        return Turn.of(entry)

    def turns(self, last: int | None = None) -> list[Turn]:
        """The turns so far, oldest first (``last``: the newest few)."""
        turns = [Turn.of(e) for e in self.board.history(self.key)]
        return turns[-last:] if last is not None else turns

    def handoff(self, to: str, note: str, *, by: str = "") -> Entry:
        """``handoff(to=..., note=..., thread=this)``."""
        return handoff(to=to, note=note, by=by, thread=self)


def handoff(
    *, to: str, note: str, by: str = "", thread: Thread | str | None = None, board: Any = None
) -> Entry:
    """Hand the work to role ``to``: ``note`` pinned on the blackboard as ``handoff/<to>``
    (context assembly never drops it), and said in ``thread`` (a Thread, or its name) if one is
    given."""
    if isinstance(thread, str):
        thread = Thread(thread, board)
    target = thread.board if thread is not None else (board or blackboard())
    entry = target.put(
        HANDOFF_PREFIX + to,
        {"from": by, "to": to, "note": note},
        tags=("handoff",),
        pinned=True,
    )
    if thread is not None:
        target.put(
            thread.key,
            {"agent": by, "role": "assistant", "content": note, "kind": "handoff", "to": to},
            tags=("thread", f"thread:{thread.name}", "handoff"),
        )
    return entry


class Agents:
    """``agents.thread(name)`` and ``agents.handoff(...)``: what agents share."""

    def thread(self, name: str, *, board: Blackboard | None = None) -> Thread:
        """The thread ``name`` of the run's blackboard (or ``board``'s)."""
        return Thread(name, board)

    def handoff(self, *, to: str, note: str, by: str = "", thread: Thread | None = None) -> Entry:
        return handoff(to=to, note=note, by=by, thread=thread)


agents = Agents()
