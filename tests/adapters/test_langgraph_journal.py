"""Graph threads as journal runs, on both backends: listing, copy, prune, delete, gc."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.errors import JournalError
from tests.adapters.lg_pipeline import build


@pytest.fixture(params=["memory", "owner"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LetItLoopCheckpointSaver]:
    if request.param == "memory":
        from letitloop.journal._memory import MemoryJournal

        yield LetItLoopCheckpointSaver(MemoryJournal(), graph="pipeline")
        return
    path = tmp_path / "journal" / "journal.duckdb"
    yield LetItLoopCheckpointSaver(path, graph="pipeline")
    from tests.conftest import _kill_owner

    _kill_owner(path)


def _run_to_interrupt(saver: LetItLoopCheckpointSaver, thread: str, log: Path) -> Any:
    app = build(saver, log)
    config = {"configurable": {"thread_id": thread}}
    app.invoke({"items": []}, config)
    return app, config


def _threads(saver: LetItLoopCheckpointSaver) -> dict[str, tuple[str, int]]:
    runs = saver.journal.list_runs(workflow="langgraph:pipeline")
    return {r.run_id: (r.status, r.steps_done) for r in runs}


def test_threads_are_listed_and_follow_copy_prune_delete(
    saver: LetItLoopCheckpointSaver, tmp_path: Path
) -> None:
    _run_to_interrupt(saver, "a", tmp_path / "log")
    checkpoints = len(list(saver.list({"configurable": {"thread_id": "a"}})))
    assert checkpoints >= 4
    assert _threads(saver) == {"langgraph:a": ("suspended", checkpoints)}
    assert saver.journal.find_run("langgraph:a") == "langgraph:a"
    detail = saver.journal.get_run("langgraph:a")
    assert [a.kind for a in detail.attempts] == ["checkpoint"] * checkpoints
    assert [a.name for a in detail.attempts][:2] == ["input -1", "loop 0"]

    saver.copy_thread("a", "b")
    assert _threads(saver)["langgraph:b"] == ("suspended", checkpoints)
    copied = saver.get_tuple({"configurable": {"thread_id": "b"}})
    assert copied is not None and copied.pending_writes  # the interrupt travels with the copy

    saver.prune(["b"])
    assert _threads(saver)["langgraph:b"] == ("suspended", 1)
    saver.delete_thread("a")
    assert set(_threads(saver)) == {"langgraph:b"}
    assert saver.get_tuple({"configurable": {"thread_id": "a"}}) is None


def test_gc_leaves_graph_threads_alone(saver: LetItLoopCheckpointSaver, tmp_path: Path) -> None:
    app, config = _run_to_interrupt(saver, "kept", tmp_path / "log")
    from langgraph.types import Command

    app.invoke(Command(resume="yes"), config)
    assert _threads(saver)["langgraph:kept"][0] == "completed"
    saver.journal.gc(older_than=time.time() + 60)
    assert "langgraph:kept" in _threads(saver)
    assert saver.get_tuple(config) is not None


def test_malformed_checkpoint_records_are_refused(saver: LetItLoopCheckpointSaver) -> None:
    rec = {"k": "lgdel", "run": "", "threads": ["x"], "runs": None, "keep": "some", "ts": 1.0}
    with pytest.raises(JournalError, match="keep must be none or latest"):
        saver.journal.append([rec])


def test_a_failing_node_marks_the_thread_failed(saver: LetItLoopCheckpointSaver) -> None:
    from langgraph.graph import END, START, StateGraph

    def broken(state: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("the API said no")

    g = StateGraph(dict)
    g.add_node("broken", broken)
    g.add_edge(START, "broken")
    g.add_edge("broken", END)
    app = g.compile(checkpointer=saver)
    with pytest.raises(ValueError):
        app.invoke({"x": 1}, {"configurable": {"thread_id": "bad"}}, durability="sync")
    run = saver.journal.get_run("langgraph:bad").run
    assert run.status == "failed" and run.workflow == "langgraph:pipeline"
    assert run.error is not None and "the API said no" in run.error["message"]


async def test_long_threads_are_listed_page_by_page(saver: LetItLoopCheckpointSaver) -> None:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(dict)
    names = [f"n{i}" for i in range(70)]
    for name in names:
        g.add_node(name, lambda s: {"n": s.get("n", 0) + 1})
    for a, b in zip([START, *names], [*names, END], strict=True):
        g.add_edge(a, b)
    app = g.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "long", "checkpoint_ns": ""}}
    assert app.invoke({"n": 0}, config)["n"] == 70
    ids = [t.config["configurable"]["checkpoint_id"] for t in saver.list(config)]
    assert len(ids) == 72 == len(set(ids)) and ids == sorted(ids, reverse=True)
    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(config, limit=70)] == ids[
        :70
    ]
    before = {"configurable": {"thread_id": "long", "checkpoint_ns": "", "checkpoint_id": ids[9]}}
    page = [
        t.config["configurable"]["checkpoint_id"]
        async for t in saver.alist(config, before=before, limit=3)
    ]
    assert page == ids[10:13]
    assert len([t async for t in saver.alist(config)]) == 72


async def test_async_methods_keep_journal_calls_off_the_event_loop(tmp_path: Path) -> None:
    import threading

    from langgraph.types import Command

    from letitloop.adapters.langgraph import AsyncLetItLoopCheckpointSaver
    from letitloop.journal._memory import MemoryJournal

    callers: list[int] = []

    class Spy(MemoryJournal):
        def append(self, records: Any, *, sync: bool = True) -> None:
            callers.append(threading.get_ident())
            super().append(records, sync=sync)

        def checkpoints(self, **query: Any) -> Any:
            callers.append(threading.get_ident())
            return super().checkpoints(**query)

    app = build(AsyncLetItLoopCheckpointSaver(Spy()), tmp_path / "log")
    config: Any = {"configurable": {"thread_id": "t"}}
    await app.ainvoke({"items": []}, config, durability="sync")
    assert (await app.ainvoke(Command(resume="ok"), config, durability="sync"))["published"]
    assert len(callers) > 10 and threading.get_ident() not in callers


def test_checkpoints_survive_a_killed_owner(journal_path: Path, tmp_path: Path) -> None:
    import json
    import os
    import signal

    from letitloop.journal._config import JournalPaths

    saver = LetItLoopCheckpointSaver(journal_path, graph="pipeline")
    _run_to_interrupt(saver, "survivor", tmp_path / "log")  # acknowledged = in the owner's log
    pid = json.loads(JournalPaths(journal_path).pid_file.read_text())["pid"]
    os.kill(pid, signal.SIGKILL)  # likely before folding; the next call's owner replays its log
    found = list(saver.list({"configurable": {"thread_id": "survivor"}}))
    assert [t.metadata["step"] for t in found] == [2, 1, 0, -1]
    assert _threads(saver) == {"langgraph:survivor": ("suspended", 4)}
    assert any(w[1] == "__interrupt__" for w in found[0].pending_writes or [])


def test_reset_and_resume_refuse_a_langgraph_thread(journal_path: Path) -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from letitloop.errors import ConfigError
    from letitloop.journal.duckdb._client import open_journal
    from letitloop.kernel._resume import resume_run

    saver = LetItLoopCheckpointSaver(journal_path)

    class S(TypedDict):
        n: int

    graph = StateGraph(S)
    graph.add_node("inc", lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, "inc")
    graph.add_edge("inc", END)
    app = graph.compile(checkpointer=saver)
    assert app.invoke({"n": 1}, {"configurable": {"thread_id": "t-guard"}}) == {"n": 2}
    journal = open_journal(journal_path)
    run_id = journal.find_run("langgraph:t-guard")
    with pytest.raises(JournalError, match="LangGraph thread"):
        journal.reset_run(run_id, by="ops")
    with pytest.raises(ConfigError, match="LangGraph resumes it"):
        resume_run(journal, run_id)
