"""LangGraph nodes on a thread's blackboard (``board_for(config)``): a node that fails after
writing and runs again (the same task) writes nothing twice; a later node reads what an earlier
one wrote; ``lil runs show`` has the board."""

import operator
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver, board_for
from letitloop.operate import run_view
from tests.conftest import _kill_owner


class State(TypedDict):
    notes: Annotated[list[str], operator.add]


def test_nodes_share_the_threads_board_and_a_rerun_node_writes_once(tmp_path: Path) -> None:
    from langgraph.graph import END, START, StateGraph

    failures = [RuntimeError("the provider went away")]

    def research(state: State, config: RunnableConfig) -> State:
        board = board_for(config)
        board.put("facts", ["otters hold hands"], tags=["facts"])
        board.put("sources", 3)
        if failures:
            raise failures.pop()  # after both writes: the node runs again on the next invoke
        return {"notes": ["researched"]}

    def write(state: State, config: RunnableConfig) -> State:
        facts = board_for(config).get("facts")
        assert facts is not None
        return {"notes": [f"draft from {facts.value[0]} (v{facts.version})"]}

    graph = StateGraph(State)
    graph.add_node("research", research)
    graph.add_node("write", write)
    graph.add_edge(START, "research")
    graph.add_edge("research", "write")
    graph.add_edge("write", END)
    path = tmp_path / "j" / "journal.duckdb"
    try:
        saver = LetItLoopCheckpointSaver(str(path), graph="otters")
        app = graph.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t1"}}
        with pytest.raises(RuntimeError):
            app.invoke({"notes": []}, config)
        out = app.invoke(None, config)
        assert out["notes"] == ["researched", "draft from otters hold hands (v1)"]
        view = saver.journal.board("langgraph-board:t1", history=True)
        assert [(e.key, e.version) for e in view.entries] == [("facts", 1), ("sources", 1)]
        shown = run_view(saver.journal, "langgraph-board:t1")
        assert [k.key for k in shown.board] == ["facts", "sources"]
    finally:
        _kill_owner(path)
