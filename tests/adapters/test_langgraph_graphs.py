"""Real LangGraph graphs on the journal: SIGKILL inside a node, human-in-the-loop across
processes, time travel, and threads in the run listing with pushed events."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from langgraph.types import Command

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.journal._contract import EventInfo
from letitloop.journal.duckdb._client import open_journal
from tests.adapters.lg_pipeline import build

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _run(
    journal: Path, thread: str, mode: str, log: Path, marker: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HERE / "lg_pipeline.py"), str(journal), thread, mode, str(log)]
        + [str(marker)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "LIL_OWNER_IDLE": "60"},
    )


def _status(journal_path: Path, thread: str) -> str:
    runs = open_journal(journal_path).list_runs(workflow="langgraph:pipeline")
    return next(r.status for r in runs if r.run_id == f"langgraph:{thread}")


def test_sigkill_inside_a_node_resumes_in_a_fresh_process(
    journal_path: Path, tmp_path: Path
) -> None:
    log, marker = tmp_path / "nodes.log", tmp_path / "killed"
    first = _run(journal_path, "research-42", "start", log, marker)
    assert first.returncode == 0, first.stderr
    asked = json.loads(first.stdout)["__interrupt__"][0]
    assert asked["question"] == "publish these?"  # interrupt() reached the caller
    assert _status(journal_path, "research-42") == "suspended"

    # a person answers from another process; the graph dies inside `summarize`
    second = _run(journal_path, "research-42", "resume", log, marker)
    assert second.returncode == -9 and marker.exists(), second.stderr
    assert _status(journal_path, "research-42") == "interrupted"
    before = log.read_text().split()
    assert before == ["fetch", "clean", "review", "review", "summarize"]

    third = _run(journal_path, "research-42", "continue", log, marker)
    assert third.returncode == 0, third.stderr
    ran = log.read_text().split()[len(before) :]
    assert ran == ["summarize", "publish"]  # finished nodes did not run again
    final = json.loads(third.stdout)
    assert final["summary"] == "4 items, approved" and final["published"] is True
    assert final["items"] == ["a", "b", "A", "B"]
    assert _status(journal_path, "research-42") == "completed"
    detail = open_journal(journal_path).get_run("langgraph:research-42")
    assert detail.attempts and all(a.kind == "checkpoint" for a in detail.attempts)


def test_time_travel_replays_from_an_earlier_checkpoint(journal_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "nodes.log"
    app = build(LetItLoopCheckpointSaver(journal_path, graph="pipeline"), log)
    config: Any = {"configurable": {"thread_id": "tt"}}
    app.invoke({"items": []}, config)
    app.invoke(Command(resume="yes"), config)
    history = list(app.get_state_history(config))
    assert history[0].values["published"] is True and history[0].next == ()
    assert [h.metadata["step"] for h in history] == sorted(
        (h.metadata["step"] for h in history), reverse=True
    )
    before_summary = next(h for h in history if h.next == ("summarize",))
    count = len(log.read_text().split())
    replayed = app.invoke(None, before_summary.config)
    assert log.read_text().split()[count:] == ["summarize", "publish"]
    assert replayed["summary"] == "4 items, yes"
    # a fork: the edited past runs on with the new value
    forked = app.update_state(before_summary.config, {"verdict": "edited"})
    assert app.invoke(None, forked)["summary"] == "4 items, edited"
    assert len(list(app.get_state_history(config))) > len(history)


async def test_async_graph_and_pushed_events(journal_path: Path, tmp_path: Path) -> None:
    from letitloop.adapters.langgraph import AsyncLetItLoopCheckpointSaver

    journal = open_journal(journal_path)
    seen: list[EventInfo] = []
    got = threading.Event()

    def on_events(events: list[EventInfo]) -> None:
        seen.extend(events)
        if any(e.kind == "lgwrite" for e in events):
            got.set()

    sub = journal.subscribe(on_events, run_id="langgraph:async-1")
    try:
        app = build(AsyncLetItLoopCheckpointSaver(journal, graph="pipeline"), tmp_path / "log")
        config: Any = {"configurable": {"thread_id": "async-1"}}
        await app.ainvoke({"items": []}, config)
        out = await app.ainvoke(Command(resume="ok"), config)
        assert out["published"] is True
        assert got.wait(10)
    finally:
        sub.close()
    assert {"lgput", "lgwrite"} <= {e.kind for e in seen}
    assert all("cp" not in e.data for e in seen)  # events carry no checkpoint bytes
    assert _status(journal_path, "async-1") == "completed"
    app2 = build(AsyncLetItLoopCheckpointSaver(journal), tmp_path / "log")
    states = [s async for s in app2.aget_state_history(config)]
    assert states[0].values["verdict"] == "ok"
