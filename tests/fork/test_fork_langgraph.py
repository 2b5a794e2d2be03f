"""Forking a LangGraph thread from a checkpoint id, by LangGraph's own semantics: the fork is a
new thread holding the original's checkpoints, invoked from that checkpoint on; the nodes before
it do not run again and the original thread keeps its history and its state."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from letitloop import fork_thread
from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.errors import ConfigError
from letitloop.journal.duckdb._client import open_journal


class State(TypedDict):
    x: int
    trail: Annotated[list[str], operator.add]


def _graph(journal: Any, ran: list[str]) -> Any:
    def node(name: str, add: int) -> Any:
        def run(state: State) -> dict[str, Any]:
            ran.append(name)
            return {"x": state["x"] + add, "trail": [f"{name}:{state['x'] + add}"]}

        return run

    g = StateGraph(State)
    g.add_node("a", node("a", 1))
    g.add_node("b", node("b", 10))
    g.add_node("c", node("c", 100))
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    return g.compile(checkpointer=LetItLoopCheckpointSaver(journal, graph="forkable"))


def _before(graph: Any, thread: str, node: str) -> str:
    """The id of the checkpoint at which ``node`` is next to run."""
    config = {"configurable": {"thread_id": thread}}
    (snap,) = [s for s in graph.get_state_history(config) if s.next == (node,)]
    return str(snap.config["configurable"]["checkpoint_id"])


def test_fork_a_thread_from_a_checkpoint(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    ran: list[str] = []
    graph = _graph(journal, ran)
    first = graph.invoke({"x": 0, "trail": []}, {"configurable": {"thread_id": "t1"}})
    assert first["x"] == 111 and ran == ["a", "b", "c"]
    original = {"configurable": {"thread_id": "t1"}}
    history = [s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(original)]

    ran.clear()
    checkpoint = _before(graph, "t1", "b")
    config = fork_thread(graph, "t1", checkpoint, new_thread_id="t1-fork")
    assert config["configurable"] == {
        "thread_id": "t1-fork",
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint,
    }
    again = graph.invoke(None, config)
    assert ran == ["b", "c"]  # "a" is reused from the checkpoint, not run
    assert again == first  # same input, same nodes: the same state
    # the original thread keeps its history and its latest state
    assert [
        s.config["configurable"]["checkpoint_id"] for s in graph.get_state_history(original)
    ] == history
    assert graph.get_state(original).values == first
    runs = {r.run_id for r in journal.list_runs(workflow="langgraph:forkable")}
    assert runs == {"langgraph:t1", "langgraph:t1-fork"}

    # with new values: update_state at the checkpoint (as node "a") forks the state too
    ran.clear()
    changed = fork_thread(graph, "t1", checkpoint, values={"x": 5}, as_node="a")
    assert changed["configurable"]["thread_id"].startswith("t1~")
    assert changed["configurable"]["checkpoint_id"] != checkpoint  # a new checkpoint of the fork
    out = graph.invoke(None, changed)
    assert ran == ["b", "c"] and out["x"] == 115
    assert graph.get_state(original).values == first

    with pytest.raises(ConfigError, match="no checkpoint"):
        fork_thread(graph, "t1", "not-a-checkpoint")
    with pytest.raises(ConfigError, match="already exists"):
        fork_thread(graph, "t1", checkpoint, new_thread_id="t1-fork")


def test_lil_runs_fork_of_a_thread_points_at_langgraph(journal_path: Path) -> None:
    from letitloop import fork_run

    journal = open_journal(journal_path)
    graph = _graph(journal, [])
    graph.invoke({"x": 0, "trail": []}, {"configurable": {"thread_id": "t2"}})
    with pytest.raises(ConfigError, match="LangGraph thread") as err:
        fork_run("langgraph:t2", 1, journal=journal)
    assert "fork_thread" in (err.value.fix or "")
