"""A graph's state comes back from the saver as the objects that were saved (issue 35, point 14).

LangGraph's own suite found three regressions of the strict default serializer: an
``AgentAction`` read back as ``{'tool': 'search_api', ...}`` (sync and async graphs) and a
pydantic ``FunctionalState`` as a plain dict, where InMemorySaver and SqliteSaver return the
objects they saved. Here the same kinds of graphs, and a value of every kind LangGraph's
serializer encodes, go through the saver on a real owner-backed DuckDB journal and on
PostgreSQL, compared with InMemorySaver. What keeps this safe is the HMAC on every stored value:
a value changed in the journal is refused in a fresh process before anything it names is
imported (the canary module below is never loaded), while the untouched one is rebuilt.
"""

from __future__ import annotations

import json
import operator
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.agents import AgentAction, AgentFinish
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from letitloop.adapters.langgraph import AsyncLetItLoopCheckpointSaver, LetItLoopCheckpointSaver
from letitloop.errors import ConfigError
from letitloop.journal._memory import MemoryJournal
from tests.adapters.lg_types import NOT_ROUND_TRIPPED, Draft, values

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(params=["duckdb", "postgres"])
def journal_spec(request: pytest.FixtureRequest) -> str:
    """A fresh journal: a DuckDB file served by its owner, or a PostgreSQL database."""
    if request.param == "duckdb":
        return str(request.getfixturevalue("journal_path"))
    return str(request.getfixturevalue("pg_dsn"))


# -- every kind of value the serializer encodes ------------------------------------------------


def _save_and_load(saver: BaseCheckpointSaver[Any], vals: dict[str, Any]) -> list[dict[str, Any]]:
    """Save ``vals`` as a checkpoint's channels and as a task's writes; what comes back."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = dict(vals)
    checkpoint["channel_versions"] = {k: saver.get_next_version(None, None) for k in vals}
    config: Any = {"configurable": {"thread_id": "types", "checkpoint_ns": ""}}
    versions = checkpoint["channel_versions"]
    saved = saver.put(config, checkpoint, {"source": "input", "step": -1}, versions)
    saver.put_writes(saved, list(vals.items()), "task-1")
    got = saver.get_tuple(saved)
    assert got is not None
    return [got.checkpoint["channel_values"], {ch: v for _, ch, v in got.pending_writes or []}]


def test_every_serializer_type_comes_back_as_langgraph_s_own_savers_return_it(
    journal_spec: str,
) -> None:
    vals = values()
    baseline = _save_and_load(InMemorySaver(), vals)
    ours = _save_and_load(LetItLoopCheckpointSaver(journal_spec), vals)
    lost = {}
    for theirs, mine in zip(baseline, ours, strict=True):
        assert set(mine) == set(vals)
        for name, value in vals.items():
            if type(mine[name]) is not type(theirs[name]) or mine[name] != theirs[name]:
                lost[name] = (type(theirs[name]).__name__, repr(mine[name])[:80])
            elif name not in NOT_ROUND_TRIPPED:  # the baseline gives back what was saved
                assert type(theirs[name]) is type(value) and theirs[name] == value, name
    assert not lost, f"came back unlike InMemorySaver's (expected type, got): {lost}"


def test_allowed_modules_asks_for_langgraph_s_strict_mode_with_those_types(
    journal_spec: str,
) -> None:
    """``allowed_modules`` is LangGraph's ``allowed_msgpack_modules``: its safe types and the
    named ones are rebuilt, others stay plain data, with this saver as with InMemorySaver."""
    allowed = [("tests.adapters.lg_types", "Line")]
    vals = {k: values()[k] for k in ("dataclass", "pydantic", "decimal", "human")}
    serde = JsonPlusSerializer(allowed_msgpack_modules=allowed)
    ours = _save_and_load(LetItLoopCheckpointSaver(journal_spec, allowed_modules=allowed), vals)
    assert ours == _save_and_load(InMemorySaver(serde=serde), vals)
    channels = ours[0]
    assert channels["dataclass"] == vals["dataclass"]  # named
    assert channels["decimal"] == vals["decimal"] and channels["human"] == vals["human"]  # safe
    assert type(channels["pydantic"]) is dict  # neither


def test_allowed_modules_and_a_serializer_of_ones_own_are_refused_together() -> None:
    with pytest.raises(ConfigError, match="both serde= and allowed_modules="):
        LetItLoopCheckpointSaver(
            MemoryJournal(), serde=JsonPlusSerializer(), allowed_modules=[("m", "C")]
        )


# -- the graphs of the three regressions -------------------------------------------------------


class AgentState(TypedDict, total=False):
    input: str
    agent_outcome: AgentAction | AgentFinish | None
    intermediate_steps: Annotated[list[tuple[AgentAction, str]], operator.add]


def _agent_graph(checkpointer: Any) -> Any:
    """An agent loop: two tool calls, then an answer; it pauses after every agent step."""

    def agent(state: AgentState) -> AgentState:
        done = len(state.get("intermediate_steps") or [])
        if done >= 2:
            return {"agent_outcome": AgentFinish(return_values={"answer": "sunny"}, log="fin")}
        query = f"q{done}"
        return {"agent_outcome": AgentAction(tool="search", tool_input=query, log=query)}

    def tools(state: AgentState) -> AgentState:
        action = state["agent_outcome"]
        if not isinstance(action, AgentAction):  # read back from the checkpoint after a pause
            raise TypeError(f"the tools node got {action!r}, not an AgentAction")
        return {"intermediate_steps": [(action, f"result for {action.tool_input}")]}

    def route(state: AgentState) -> str:
        return END if isinstance(state["agent_outcome"], AgentFinish) else "tools"

    graph = StateGraph(AgentState)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer, interrupt_after=["agent"])


def _agent_run(checkpointer: Any) -> list[Any]:
    """Pause, edit the pending action, resume to the end; every state seen on the way."""
    app, config = _agent_graph(checkpointer), {"configurable": {"thread_id": "agent"}}
    app.invoke({"input": "weather in sf", "intermediate_steps": []}, config)
    seen = [app.get_state(config).values]
    edited = AgentAction(tool="search", tool_input="edited", log="edited by a person")
    app.update_state(config, {"agent_outcome": edited})
    seen.append(app.get_state(config).values)
    while app.get_state(config).next:
        app.invoke(None, config)
    seen.append(app.get_state(config).values)
    seen.append([s.values for s in app.get_state_history(config)])
    return seen


async def _agent_run_async(checkpointer: Any) -> list[Any]:
    app, config = _agent_graph(checkpointer), {"configurable": {"thread_id": "agent"}}
    await app.ainvoke({"input": "weather in sf", "intermediate_steps": []}, config)
    seen = [(await app.aget_state(config)).values]
    edited = AgentAction(tool="search", tool_input="edited", log="edited by a person")
    await app.aupdate_state(config, {"agent_outcome": edited})
    seen.append((await app.aget_state(config)).values)
    while (await app.aget_state(config)).next:
        await app.ainvoke(None, config)
    seen.append((await app.aget_state(config)).values)
    seen.append([s.values async for s in app.aget_state_history(config)])
    return seen


def _check_agent_states(ours: list[Any], baseline: list[Any]) -> None:
    paused, edited, final, history = ours
    assert paused["agent_outcome"] == AgentAction(tool="search", tool_input="q0", log="q0")
    assert isinstance(edited["agent_outcome"], AgentAction)
    assert edited["agent_outcome"].tool_input == "edited"
    assert isinstance(final["agent_outcome"], AgentFinish)
    steps = final["intermediate_steps"]
    assert [type(a) for a, _ in steps] == [AgentAction, AgentAction]
    assert [(a.tool_input, obs) for a, obs in steps] == [
        ("edited", "result for edited"),
        ("q1", "result for q1"),
    ]
    assert any(isinstance(h.get("agent_outcome"), AgentAction) for h in history)
    assert ours == baseline  # every state, the whole history, as InMemorySaver gives them


def test_agent_actions_come_back_through_pause_edit_and_resume(journal_spec: str) -> None:
    ours = _agent_run(LetItLoopCheckpointSaver(journal_spec))
    _check_agent_states(ours, _agent_run(InMemorySaver()))


async def test_agent_actions_come_back_in_an_async_graph(journal_spec: str) -> None:
    ours = await _agent_run_async(AsyncLetItLoopCheckpointSaver(journal_spec))
    _check_agent_states(ours, await _agent_run_async(InMemorySaver()))


def _functional_run(checkpointer: Any) -> tuple[Any, Any, int]:
    """A functional-API graph: a task's pydantic result is read back after an interrupt."""
    calls = []

    @task
    def write(draft: Draft) -> Draft:
        calls.append(draft.text)
        return Draft(text=draft.text + " written")

    @entrypoint(checkpointer=checkpointer)
    def flow(draft: Draft) -> Draft:
        pending = write(draft)
        reviewer = interrupt("who reviews it?")
        done = pending.result()  # after the resume: the task's saved write
        if not isinstance(done, Draft):
            raise TypeError(f"the task's result came back as {done!r}, not a Draft")
        return Draft(text=done.text, reviewer=reviewer)

    config: Any = {"configurable": {"thread_id": "functional"}}
    first = flow.invoke(Draft(text="essay"), config)
    assert "__interrupt__" in first
    out = flow.invoke(Command(resume="ada"), config)
    return out, flow.get_state(config).values, len(calls)


def test_a_pydantic_task_result_comes_back_after_an_interrupt(journal_spec: str) -> None:
    out, state, calls = _functional_run(LetItLoopCheckpointSaver(journal_spec))
    assert out == Draft(text="essay written", reviewer="ada")
    assert calls == 1  # the task ran once: its result was read back, as a Draft
    assert (out, state, calls) == _functional_run(InMemorySaver())


# -- fresh processes: a changed value is refused before it imports anything ---------------------

CANARY = """
import os
from dataclasses import dataclass

with open(os.environ["LIL_CANARY_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")


@dataclass
class Memo:
    text: str
"""


def _probe(tmp_path: Path, *args: str) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "canary"), str(ROOT)])
    env["LIL_CANARY_LOG"] = str(tmp_path / "canary.log")
    out = subprocess.run(
        [sys.executable, str(HERE / "lg_types_probe.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def _tamper(spec: str, table: str, column: str) -> None:
    """Change ``original`` to ``tampered`` inside the stored bytes that hold it, as someone
    editing the journal's tables would; the value still names the canary's class."""
    if spec.startswith("postgresql://"):
        import psycopg

        from letitloop.journal.postgres._schema import DEFAULT_SCHEMA

        with psycopg.connect(spec, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{DEFAULT_SCHEMA}"')
            changed = conn.execute(
                f"UPDATE {table} SET {column} = overlay({column} placing 'tampered' "
                f"from position('original' in {column})) WHERE position('original' in {column}) > 0"
            ).rowcount
        assert changed == 1
        return
    import duckdb

    from letitloop.journal.duckdb._client import stop_owner

    stop_owner(spec)
    db = duckdb.connect(spec)
    try:
        rows = db.execute(f"SELECT rowid, {column} FROM {table}").fetchall()
        held = [(rowid, blob) for rowid, blob in rows if b"original" in blob]
        assert len(held) == 1
        for rowid, blob in held:
            changed = blob.replace(b"original", b"tampered")
            db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", [changed, rowid])
    finally:
        db.close()


def _imports(tmp_path: Path) -> int:
    log = tmp_path / "canary.log"
    return len(log.read_text().split()) if log.exists() else 0


def test_a_changed_value_is_refused_before_its_class_is_imported(
    journal_spec: str, tmp_path: Path
) -> None:
    (tmp_path / "canary").mkdir()
    (tmp_path / "canary" / "lil_canary_state.py").write_text(CANARY)
    _probe(tmp_path, "write", journal_spec)  # a thread with it in a checkpoint, one in a write
    assert _imports(tmp_path) == 1

    clean = _probe(tmp_path, "read", journal_spec)  # a new process rebuilds the saved objects
    for where in ("checkpoint", "writes"):
        assert clean[where]["type"] == "lil_canary_state.Memo", clean
        assert clean[where]["text"] == "original-text"
    assert _imports(tmp_path) == 2

    _tamper(journal_spec, "lg_checkpoints", "checkpoint")
    _tamper(journal_spec, "lg_writes", "value")
    refused = _probe(tmp_path, "read", journal_spec)
    assert refused == {w: {"error": "TamperedDataError", "imported": False} for w in clean}
    assert _imports(tmp_path) == 2, "a changed value imported the module it names"


def test_strict_msgpack_rebuilds_what_langgraph_s_savers_rebuild(
    journal_spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under LANGGRAPH_STRICT_MSGPACK a type the graph's schemas do not name stays plain data,
    with this saver as with InMemorySaver; the schema's own types come back."""
    monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "true")
    (tmp_path / "canary").mkdir()
    got = _probe(tmp_path, "strict", journal_spec)
    assert got["letitloop"] == got["memory"], got
    assert got["letitloop"] == {"order": "Order", "extra": "dict", "line_is_line": False}
