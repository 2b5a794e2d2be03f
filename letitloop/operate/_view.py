"""One run as every surface shows it in full: its summary, steps and attempts, result, the
approvals it waits for, its side effects in doubt and its ``step.map`` items.

``lil runs show``, lil-tui's run screen, the lab's run panel, the notebook's inspector and the
language server's hovers read a run through ``run_view``, so they agree on every number. Its
blackboard comes with it: keys at their newest versions, and agents' threads as conversations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from letitloop.operate._board import (
    BoardKey,
    Conversation,
    board_key_json,
    board_keys,
    conversation_json,
    conversations,
)
from letitloop.operate._effects import Doubt, doubt_json, doubts_of
from letitloop.operate._runs import (
    HUGE,
    RunSummary,
    StepSummary,
    attempt_json,
    run_json,
    step_json,
    steps_of,
    summary_of,
)
from letitloop.operate._shapes import approval_json, map_json

if TYPE_CHECKING:
    from letitloop.journal import ApprovalInfo, AttemptInfo, Journal, MapItems, RunDetail

MAX_RESULT = 4000  # characters of a result preview


class RunView(NamedTuple):
    """Everything a surface shows about one run."""

    run: RunSummary
    steps: list[StepSummary]
    attempts: list[AttemptInfo]  # every attempt of the current epoch, by position and attempt
    result: str | None  # a preview of the result (never decoded: no user code runs)
    result_codec: str | None
    entry: str | None  # how to resume it by name: "module:qualname"
    approvals: list[ApprovalInfo]  # pending, oldest first
    doubts: list[Doubt]
    maps: list[MapItems]
    board: tuple[BoardKey, ...] = ()  # its blackboard, each key at its newest version
    conversations: tuple[Conversation, ...] = ()  # the agents' threads on its blackboard


def result_preview(detail: RunDetail, limit: int = MAX_RESULT) -> str | None:
    """A preview of the run's result, never running user code (JSON pretty-printed)."""
    if detail.result is None:
        return None
    from letitloop.journal import preview

    return preview(*detail.result, shown=detail.result_shown, limit=limit)  # says what it cut


def view_of(journal: Journal, detail: RunDetail) -> RunView:
    """The full view of a run already read."""
    from letitloop.journal import map_items

    run_id = detail.run.run_id
    pending = journal.approvals(status="pending", run_id=run_id, limit=HUGE)
    board = journal.board(run_id, history=True)
    return RunView(
        run=summary_of(journal, detail),
        steps=steps_of(detail),
        attempts=sorted(detail.attempts, key=lambda a: (a.position, a.attempt)),
        result=result_preview(detail),
        result_codec=detail.result[0] if detail.result else None,
        entry=detail.entry,
        approvals=sorted(pending, key=lambda a: (a.created, a.id)),
        doubts=doubts_of(detail),
        maps=map_items(journal, detail),
        board=tuple(board_keys(board)),
        conversations=tuple(conversations(board)),
    )


def run_view(journal: Journal, text: str) -> RunView:
    """The full view of the run ``text`` names (an id, or an unambiguous prefix or suffix)."""
    return view_of(journal, journal.get_run(journal.find_run(text)))


def view_json(v: RunView) -> dict[str, Any]:
    """A run in full as every JSON surface writes it."""
    return {
        "run": run_json(v.run),
        "steps": [step_json(s) for s in v.steps],
        "attempts": [attempt_json(a) for a in v.attempts],
        "result": None if v.result is None else {"codec": v.result_codec, "preview": v.result},
        "entry": v.entry,
        "approvals": [approval_json(a) for a in v.approvals],
        "effects": [doubt_json(d) for d in v.doubts],
        "maps": [map_json(m) for m in v.maps],
        "board": [board_key_json(k) for k in v.board],
        "conversations": [conversation_json(c) for c in v.conversations],
    }
