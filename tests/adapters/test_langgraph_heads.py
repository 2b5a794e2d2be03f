"""The owner's in-memory newest checkpoints (``journal.duckdb.owner._checkpoint_heads``).

Every answer it gives must be the one the tables would give. A model-based test drives random
puts, writes, re-puts, early writes, deletes and copies through ``Heads`` and through
``MemoryCheckpoints`` (the contract's in-memory twin), seeding ``Heads`` with answers taken at
random earlier moments (stale ones included) and compares every answer it dares to give. The
owner tests check the same on a real owner against DuckDB, and that the reads skip DuckDB.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.journal import _checkpoints
from letitloop.journal._contract import CheckpointRow, CheckpointWrite
from letitloop.journal.duckdb.owner._checkpoint_heads import Heads

THREADS = ["a", "b", "c"]
NSES = ["", "sub:1"]


def _wire(rows: list[CheckpointRow]) -> list[list[Any]]:
    out: list[list[Any]] = []
    for r in rows:
        writes = [
            [w.task_id, w.idx, w.channel, w.value[0], w.value[1], w.task_path] for w in r.writes
        ]
        row: list[Any] = [r.thread_id, r.ns, r.checkpoint_id, r.parent_id, *r.checkpoint]
        out.append([*row, *r.metadata, r.created, writes])
    return out


def _early(model: _checkpoints.MemoryCheckpoints, thread: str, ns: str) -> list[list[Any]]:
    """What ``CheckpointStore.early_writes`` reads: writes of checkpoints newer than the head."""
    head = max((c for t, n, c in model.cps if (t, n) == (thread, ns)), default=None)
    return [
        [cid, task, idx, ch, value[0], value[1], path]
        for (t, n, cid), stored in model.writes.items()
        if (t, n) == (thread, ns) and (head is None or cid > head)
        for (task, idx), (ch, value, path) in stored.items()
    ]


def _random_record(rng: random.Random, n: int) -> dict[str, Any]:
    thread, ns = rng.choice(THREADS), rng.choice(NSES)
    cid = f"{rng.randrange(12):04}"  # few ids: re-puts, older and newer ones all happen
    roll = rng.random()
    if roll < 0.4:
        row = CheckpointRow(thread, ns, cid, None, ("t", b"cp%d" % n), ("t", b"m"), n, [])
        return _checkpoints.checkpoint_record(row, "langgraph:g", "running", {"step": n})
    if roll < 0.85:
        writes = [
            CheckpointWrite(rng.choice("xy"), rng.choice([-1, 0, 1]), f"ch{n}", ("t", b"v%d" % n))
            for _ in range(rng.randrange(1, 3))
        ]
        task = writes[0].task_id
        return _checkpoints.checkpoint_writes_record(
            thread, ns, cid, task, rng.choice("pq"), writes, None, None
        )
    if roll < 0.93:
        return _checkpoints.delete_record([thread], None, rng.random() < 0.5)
    if roll < 0.97:
        return _checkpoints.copy_record(thread, rng.choice(THREADS))
    return _checkpoints.delete_record(None, ["none-of-them"], False)


@pytest.mark.parametrize("seed", range(40))
def test_heads_answer_exactly_what_the_tables_hold(seed: int) -> None:
    rng = random.Random(seed)
    model, heads = _checkpoints.MemoryCheckpoints(), Heads()
    pending_seeds: list[tuple[dict[str, Any], list[list[Any]], list[list[Any]], int]] = []
    pending_pairs: list[tuple[set[tuple[str, str]], int]] = []
    answered = 0
    for lsn in range(1, 400):
        rec = _random_record(rng, lsn)
        model.apply(rec)
        heads.apply([(lsn, rec)])
        for thread in THREADS:  # a read the database thread answers now, delivered later
            for ns in NSES:
                req = {"thread": thread, "ns": ns, "cid": None, "limit": 1}
                if rng.random() < 0.1:
                    early = _early(model, thread, ns)
                    pending_seeds.append((req, _wire(model.query(req)), early, lsn))
        if rng.random() < 0.05:
            pairs = {(t, n) for t, n, _ in model.cps} | {(t, n) for t, n, _ in model.writes}
            pending_pairs.append((pairs, lsn))
        while pending_seeds and rng.random() < 0.5:  # in the order they were answered
            heads.seed(*pending_seeds.pop(0))
        if pending_pairs and rng.random() < 0.3:
            heads.learn_pairs(*pending_pairs.pop(0))
        for thread in THREADS:
            for ns in NSES:
                ids = [None] + [f"{i:04}" for i in range(12)]
                req = {"thread": thread, "ns": ns, "cid": rng.choice(ids), "limit": 1}
                got = heads.answer(req)
                if got is not None:
                    answered += 1
                    assert got == _wire(model.query(req)), (seed, lsn, req)
    assert answered > 50  # the cache does answer, not only refuse


def test_a_stale_seed_is_refused() -> None:
    heads = Heads()
    req = {"thread": "t", "ns": "", "cid": None, "limit": 1}
    row = CheckpointRow("t", "", "0002", None, ("t", b"new"), ("t", b"m"), 2.0, [])
    heads.apply([(10, _checkpoints.checkpoint_record(row, "langgraph:g", "running", {}))])
    heads.seed(req, [], [], 9)  # read before the put at 10 was folded: it says "none"
    assert heads.answer(req) is None
    heads.seed(req, _wire([row]), [], 10)
    assert heads.answer(req) == _wire([row])


def test_requests_other_than_the_newest_go_to_duckdb() -> None:
    heads = Heads()
    heads.learn_pairs(set(), 0)
    assert heads.answer({"thread": "t", "ns": "", "limit": 1}) == []  # a new thread: none
    for other in ({"limit": 2}, {"before": "9"}, {"filter": {"a": 1}}, {"ns": None}):
        assert heads.answer({"thread": "t", "ns": "", "limit": 1} | other) is None


# -- a real owner -----------------------------------------------------------------------------


class State(TypedDict):
    n: int


def _graph(saver: LetItLoopCheckpointSaver) -> Any:
    g = StateGraph(State)
    g.add_node("one", lambda s: {"n": s["n"] + 1})
    g.add_node("two", lambda s: {"n": s["n"] * 10})
    g.add_edge(START, "one")
    g.add_edge("one", "two")
    g.add_edge("two", END)
    return g.compile(checkpointer=saver, interrupt_before=["two"])


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[LetItLoopCheckpointSaver]:
    path = tmp_path / "journal" / "journal.duckdb"
    yield LetItLoopCheckpointSaver(path, graph="heads")
    from tests.conftest import _kill_owner

    _kill_owner(path)


def _hits(saver: LetItLoopCheckpointSaver) -> int:
    from letitloop.journal.duckdb._client import OwnerJournal

    assert isinstance(saver.journal, OwnerJournal)
    return int(saver.journal.stats()["lg_heads"]["hits"])


def _from_duckdb(saver: LetItLoopCheckpointSaver, thread: str, ns: str = "") -> list[Any]:
    """The newest checkpoint as DuckDB answers it (a limit of 2 is never answered from memory)."""
    return saver.journal.checkpoints(thread_id=thread, ns=ns, limit=2)[:1]


def test_owner_answers_newest_checkpoints_from_memory(saver: LetItLoopCheckpointSaver) -> None:
    app = _graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    app.invoke({"n": 1}, config)  # stops before "two"
    before = _hits(saver)
    state = app.get_state(config)
    assert state.next == ("two",) and state.values == {"n": 2}
    assert _hits(saver) > before  # answered by the owner's event loop, not DuckDB
    cached = saver.journal.checkpoints(thread_id="t1", ns="", limit=1)
    assert cached == _from_duckdb(saver, "t1")
    assert app.invoke(None, config) == {"n": 20}  # resumes from the cached head
    assert saver.journal.checkpoints(thread_id="t1", ns="", limit=1) == _from_duckdb(saver, "t1")
    assert saver.journal.checkpoints(thread_id="new", ns="", limit=1) == []


def test_owner_heads_follow_copy_prune_delete(saver: LetItLoopCheckpointSaver) -> None:
    app = _graph(saver)
    for thread in ("s", "u"):
        app.invoke({"n": 1}, {"configurable": {"thread_id": thread}})
        app.get_state({"configurable": {"thread_id": thread}})  # seeds the owner's memory
    saver.copy_thread("s", "u")
    app.invoke(None, {"configurable": {"thread_id": "s"}})
    saver.prune(["u"], strategy="keep_latest")
    for thread in ("s", "u"):
        cached = saver.journal.checkpoints(thread_id=thread, ns="", limit=1)
        assert cached == _from_duckdb(saver, thread) and cached
    saver.delete_thread("s")
    assert saver.journal.checkpoints(thread_id="s", ns="", limit=1) == []
    assert _from_duckdb(saver, "s") == []


def test_owner_heads_see_another_process_write(
    saver: LetItLoopCheckpointSaver, tmp_path: Path
) -> None:
    import subprocess
    import sys

    app = _graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "shared"}}
    app.invoke({"n": 1}, config)
    app.get_state(config)  # the owner keeps this head now
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from tests.adapters.test_langgraph_heads import _graph;"
        "from letitloop.adapters.langgraph import LetItLoopCheckpointSaver as S;"
        "app = _graph(S(sys.argv[1], graph='heads'));"
        "print(app.invoke(None, {'configurable': {'thread_id': 'shared'}}))"
    )
    root = str(Path(__file__).resolve().parents[2])
    path = str(saver._path)
    out = subprocess.run([sys.executable, "-c", code, path, root], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "20" in out.stdout
    state = app.get_state(config)
    assert state.values == {"n": 20} and state.next == ()
