"""Fresh-process roles for the saver's type tests: what a new process imports when it loads.

    python lg_types_probe.py write JOURNAL    # Memos of module lil_canary_state, two threads
    python lg_types_probe.py read JOURNAL     # prints what comes back of each, as JSON
    python lg_types_probe.py strict JOURNAL            # a graph under LANGGRAPH_STRICT_MSGPACK

``lil_canary_state`` is written by the test into a folder on ``PYTHONPATH``; importing it
appends the importing process's pid to ``$LIL_CANARY_LOG``, so a test sees whether loading a
checkpoint imported it. ``strict`` runs one graph with this saver and with InMemorySaver and
prints the type of each value both got back.
"""

from __future__ import annotations

import json
import operator
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.adapters.lg_types import Line, Order, values


def write(journal: str) -> dict[str, Any]:
    """Two threads: ``checkpoint`` has a Memo in its channels, ``writes`` in a task's write."""
    from langgraph.checkpoint.base import empty_checkpoint
    from lil_canary_state import Memo  # type: ignore[import-not-found]

    from letitloop.adapters.langgraph import LetItLoopCheckpointSaver

    saver = LetItLoopCheckpointSaver(journal)
    for where in ("checkpoint", "writes"):
        memo = Memo("original-text")
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"memo": memo if where == "checkpoint" else "plain"}
        checkpoint["channel_versions"] = {"memo": saver.get_next_version(None, None)}
        config: Any = {"configurable": {"thread_id": where, "checkpoint_ns": ""}}
        saved = saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
        saver.put_writes(saved, [("memo", memo if where == "writes" else "plain")], "task-1")
    return {}


def read(journal: str) -> dict[str, Any]:
    """What each thread's Memo comes back as, or the error, and whether its module was imported
    (checked before the next thread is read)."""
    from letitloop.adapters.langgraph import LetItLoopCheckpointSaver

    saver = LetItLoopCheckpointSaver(journal)
    out: dict[str, Any] = {}
    for where in ("checkpoint", "writes"):
        try:
            got = saver.get_tuple({"configurable": {"thread_id": where, "checkpoint_ns": ""}})
        except Exception as exc:
            out[where] = {
                "error": type(exc).__name__,
                "imported": "lil_canary_state" in sys.modules,
            }
            continue
        assert got is not None
        found = [got.checkpoint["channel_values"]["memo"], (got.pending_writes or [])[0][2]]
        memo = next(v for v in found if v != "plain")
        out[where] = {
            "error": None,
            "imported": "lil_canary_state" in sys.modules,
            "type": f"{type(memo).__module__}.{type(memo).__qualname__}",
            "text": getattr(memo, "text", None),
        }
    return out


class State(TypedDict, total=False):
    order: Order
    extras: Annotated[list[Any], operator.add]


def strict(journal: str) -> dict[str, Any]:
    """One graph whose schema names ``Order``; a ``Line`` rides in an untyped channel."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from letitloop.adapters.langgraph import LetItLoopCheckpointSaver

    def node(state: State) -> State:
        return {"extras": [values()["dataclass"]]}

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    out: dict[str, Any] = {}
    for name, saver in (
        ("memory", InMemorySaver()),
        ("letitloop", LetItLoopCheckpointSaver(journal)),
    ):
        app = graph.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "strict"}}
        app.invoke({"order": values()["pydantic"], "extras": []}, config)
        state = app.get_state(config).values
        out[name] = {
            "order": type(state["order"]).__name__,
            "extra": type(state["extras"][0]).__name__,
            "line_is_line": isinstance(state["extras"][0], Line),
        }
    return out


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    result = {"write": write, "read": read, "strict": strict}[role](*args)
    print(json.dumps(result))
