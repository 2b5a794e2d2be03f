"""The saver's client-side group commit: a node's writes ride with its checkpoint (one append,
one fsync), and every call still returns only once what it saved is durable."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from letitloop.adapters import langgraph as lg
from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.errors import JournalError
from tests.conftest import _kill_owner


class State(TypedDict):
    n: int


def _linear(saver: LetItLoopCheckpointSaver, nodes: int) -> Any:
    g = StateGraph(State)
    names = [f"n{i}" for i in range(nodes)]
    for name in names:
        g.add_node(name, lambda s: {"n": s["n"] + 1})
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(checkpointer=saver)


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    journal = tmp_path / "journal" / "journal.duckdb"
    yield journal
    _kill_owner(journal)


def _count_appends(saver: LetItLoopCheckpointSaver) -> list[int]:
    journal, sizes = saver.journal, []
    real = journal.append

    def append(records: Any, *, sync: bool = True) -> None:
        sizes.append(len(records))
        real(records, sync=sync)

    journal.append = append  # type: ignore[method-assign]
    return sizes


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_node_costs_one_append(
    path: Path, durability: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lg, "WRITES_WAIT", 5.0)  # a loaded machine never splits a node's pair
    saver = LetItLoopCheckpointSaver(path)
    sizes = _count_appends(saver)
    app = _linear(saver, 10)
    config: Any = {"configurable": {"thread_id": durability}}
    assert app.invoke({"n": 0}, config, durability=durability) == {"n": 10}
    # 12 checkpoints (input, 10 nodes, none after the last) and 11 tasks' writes: 23 records
    assert sum(sizes) == 23
    assert len(sizes) <= 13, sizes  # two appends a node before
    history = list(saver.list(config))
    assert len(history) == 12 and all(t.pending_writes for t in history[1:])


def test_plain_writes_alone_are_durable_when_put_writes_returns(path: Path) -> None:
    saver = LetItLoopCheckpointSaver(path)
    cp = empty_checkpoint()
    config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {}, {})
    saver.put_writes(config, [("n", 1), ("m", 2)], "task-1")  # no checkpoint follows
    _kill_owner(path)  # SIGKILL: only what reached the log survives
    again = LetItLoopCheckpointSaver(path)
    found = again.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    assert found is not None
    assert found.pending_writes == [("task-1", "n", 1), ("task-1", "m", 2)]


def test_a_failed_append_reaches_every_caller_it_carried(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lg, "WRITES_WAIT", 5.0)
    saver = LetItLoopCheckpointSaver(path)
    cp = empty_checkpoint()
    config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, cp, {}, {})
    saver.journal.close()
    errors: list[BaseException] = []

    def writes() -> None:
        try:
            saver.put_writes(config, [("n", 1)], "task-1")
        except JournalError as exc:
            errors.append(exc)

    waiting = threading.Thread(target=writes)
    waiting.start()
    while not saver._batches.queued:  # the writes wait for a checkpoint to carry them
        threading.Event().wait(0.005)
    nxt = empty_checkpoint()
    with pytest.raises(JournalError, match="closed"):
        saver.put(config, nxt, {}, {})
    waiting.join(10)
    assert len(errors) == 1 and "closed" in str(errors[0])
