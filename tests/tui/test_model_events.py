"""The runs screen's model follows runs from pushed events alone: LangGraph threads (checkpoints
pushed by the owner) and cancellations, compared with a full read of the journal."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.journal._contract import EventInfo
from letitloop.journal.duckdb._client import open_journal
from letitloop.tui._model import Model


class S(TypedDict):
    n: int


def test_a_langgraph_thread_moves_forward_from_pushed_checkpoints(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    events: list[EventInfo] = []
    sub = journal.subscribe(events.extend)
    graph = StateGraph(S)
    graph.add_node("one", lambda s: {"n": s["n"] + 1})
    graph.add_node("two", lambda s: {"n": s["n"] * 10})
    graph.add_edge(START, "one")
    graph.add_edge("one", "two")
    graph.add_edge("two", END)
    app = graph.compile(checkpointer=LetItLoopCheckpointSaver(journal_path))
    assert app.invoke({"n": 1}, {"configurable": {"thread_id": "live"}}) == {"n": 20}
    model = Model(journal_path)
    (full,) = [r for r in model.runs() if r.run_id == "langgraph:live"]
    deadline = time.monotonic() + 10
    mine: list[Any] = []
    while time.monotonic() < deadline:
        mine = [e for e in events if e.run_id == "langgraph:live"]
        if sum(e.kind == "lgput" for e in mine) >= full.steps_done:
            break
        time.sleep(0.02)
    sub.close()
    row = model.apply(None, mine)
    assert row is not None and row.workflow == full.workflow == "langgraph:graph"
    assert (row.status, row.steps_done) == (full.status, full.steps_done)
    assert (row.status, row.steps_done) == ("completed", full.steps_done)
    assert full.steps_done >= 3  # input, one, two


def test_a_cancel_event_marks_the_row(journal_path: Path) -> None:
    from letitloop import durable, step, suspend
    from letitloop.errors import Suspended

    journal = open_journal(journal_path)

    @durable(journal=journal, run_id="c", name="pausing")
    def pausing() -> None:
        step("a", lambda: 1)
        suspend("later")

    try:
        pausing()
    except Suspended:
        pass
    model = Model(journal_path)
    (row,) = model.runs()
    assert row.status == "suspended"
    journal.cancel_run(row.run_id, by="ops")
    cancel = [e for e in journal.events(run_id=row.run_id) if e.kind == "cancel"]
    moved = model.apply(row, cancel)
    assert moved is not None and moved.status == "cancelled"
