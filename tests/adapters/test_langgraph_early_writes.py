"""Writes that reach the DuckDB journal before their checkpoint (LangGraph's "async" durability).

LangGraph's own suite (``test_addressed_resume_keeps_a_rerun_tasks_write_to_a_new_channel``,
async durability) found acknowledged writes lost on the owner: a step's writes folded before
its checkpoint's ``lgput`` were not counted when the put marked the checkpoint "fresh" (its
writes need no conflict check), so a task's later write at the same (task, idx) was a plain
INSERT that broke the primary key; the fold was rolled back, but the thread cache kept what it
had learned in it, and the record-by-record retry then dropped every regular write of those
records. The model test folds random record sequences (writes before, after and again after
their checkpoint; special writes; more early checkpoints than the store tracks) into a real
DuckDB store in random batches, and compares every stored write with the contract's in-memory
twin; the graph test is that upstream scenario on a real owner.
"""

from __future__ import annotations

import operator
import random
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.journal import _checkpoints
from letitloop.journal._contract import CheckpointRow, CheckpointWrite
from letitloop.journal.duckdb.owner._store import Store

THREAD = "t"


def _put(cid: str, parent: str | None) -> dict[str, Any]:
    row = CheckpointRow(THREAD, "", cid, parent, ("msgpack", b"cp" + cid.encode()),
                        ("msgpack", b"m"), 1.0, [])  # fmt: skip
    return _checkpoints.checkpoint_record(row, "langgraph:g", "running", {"step": 1})


def _writes(cid: str, task: str, writes: list[tuple[int, str, bytes]]) -> dict[str, Any]:
    encoded = [CheckpointWrite(task, idx, ch, ("msgpack", value)) for idx, ch, value in writes]
    return _checkpoints.checkpoint_writes_record(THREAD, "", cid, task, "", encoded, None, None)


def _script(rng: random.Random, checkpoints: int) -> list[dict[str, Any]]:
    """Records as savers send them: each checkpoint's writes may come before its put."""
    recs: list[dict[str, Any]] = []
    parent = None
    for n in range(checkpoints):
        cid = f"cp{n:04}"
        early = rng.random() < 0.6
        batch = [
            _writes(cid, f"task{rng.randrange(3)}", [(i, f"ch{i}", f"{n}.{i}".encode())])
            for i in range(rng.randrange(1, 3))
        ]
        recs += [*batch, _put(cid, parent)] if early else [_put(cid, parent), *batch]
        parent = cid
    for _ in range(checkpoints * 2):  # later writes: re-sent, new indexes, special channels
        cid = f"cp{rng.randrange(checkpoints):04}"
        idx = rng.choice([-4, -3, 0, 1, 2])
        value = f"again{rng.random()}".encode()
        recs.append(_writes(cid, f"task{rng.randrange(3)}", [(idx, f"ch{idx}", value)]))
    return recs


def _stored(store: Store) -> set[tuple[Any, ...]]:
    rows = store.db.execute(
        "SELECT checkpoint_id, task_id, idx, channel, value FROM lg_writes"
    ).fetchall()
    return {tuple(r) for r in rows}


def _expected(recs: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    twin = _checkpoints.MemoryCheckpoints()
    for rec in recs:
        twin.apply(rec)
    return {
        (cid, task, idx, channel, value[1])
        for (_, _, cid), writes in twin.writes.items()
        for (task, idx), (channel, value, _) in writes.items()
    }


@pytest.mark.parametrize("seed", range(6))
def test_the_store_keeps_exactly_the_writes_of_the_contract(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    recs = _script(rng, checkpoints=rng.choice([5, 40, 90]))  # 90: more than it tracks early
    store = Store(tmp_path / "j.duckdb")
    try:
        lsn, i = 0, 0
        while i < len(recs):  # folded in batches of random sizes, as the owner groups them
            size = rng.randrange(1, 30)
            items = [(lsn + j + 1, rec) for j, rec in enumerate(recs[i : i + size])]
            store.fold(items)
            lsn, i = lsn + size, i + size
        assert store.quarantine_rows() == []
        assert _stored(store) == _expected(recs)
    finally:
        store.close()


def test_a_rolled_back_fold_leaves_nothing_behind_in_the_thread_cache(tmp_path: Path) -> None:
    """More checkpoints with early writes than the store tracks, then their puts, then a task
    writing again to the first and the last: a conflict rolls the batch back, and the retry
    must still keep every write (the cache kept a half-learned batch and dropped them)."""
    early = [_writes(f"cp{n:04}", "task0", [(0, "a", b"first")]) for n in range(70)]
    puts = [_put(f"cp{n:04}", None) for n in range(70)]
    again = [(0, "a", b"second"), (1, "b", b"new")]
    later = [_writes("cp0000", "task0", again), _writes("cp0069", "task0", again)]
    recs = [*early, *puts, *later]
    store = Store(tmp_path / "j.duckdb")
    try:
        store.fold(list(enumerate(early, 1)))
        store.fold([(i + len(early), r) for i, r in enumerate([*puts, *later], 1)])
        assert store.quarantine_rows() == []
        assert _stored(store) == _expected(recs)
        assert {("cp0000", "task0", 1, "b", b"new"), ("cp0069", "task0", 1, "b", b"new")} <= (
            _stored(store)
        )
    finally:
        store.close()


# -- LangGraph's scenario on a real owner ---------------------------------------------------------


def _append(current: list[Any], writes: list[list[Any]]) -> list[Any]:
    return [*current, *(x for w in writes for x in w)]


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    extra: Annotated[list[str], DeltaChannel(_append)]  # rebuilt from stored writes
    flag: bool


def _resume_an_earlier_checkpoint(saver: Any) -> tuple[Any, Any]:
    """Two parallel nodes, one interrupts; the paused checkpoint is resumed after a later
    update, with a command that makes the re-run node write a new channel."""

    def done(state: State) -> State:
        return {"log": ["done"], **({"extra": ["new"]} if state.get("flag") else {})}

    def ask(state: State) -> State:
        interrupt("approve?")
        return {"log": ["ask"]}

    graph = StateGraph(State)
    graph.add_node("done", done)
    graph.add_node("ask", ask)
    graph.add_edge(START, "done")
    graph.add_edge(START, "ask")
    app = graph.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    app.invoke({"log": ["in"]}, config, durability="async")
    paused = app.get_state(config).config
    app.update_state(config, None)
    live = app.invoke(Command(resume="yes", update={"flag": True}), paused, durability="async")
    return live["extra"], app.get_state(config).values["extra"]


def test_async_durability_keeps_a_rerun_task_s_writes(journal_path: Path) -> None:
    ours = _resume_an_earlier_checkpoint(LetItLoopCheckpointSaver(journal_path))
    assert ours == _resume_an_earlier_checkpoint(InMemorySaver()) == (["new"], ["new"])
