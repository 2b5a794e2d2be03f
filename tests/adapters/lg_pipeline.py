"""A five-node LangGraph pipeline for the cross-process tests; also runnable as a script.

    python lg_pipeline.py JOURNAL THREAD start|resume|continue LOG MARKER

Every node logs its name to LOG when it starts; ``review`` asks a person with ``interrupt()``;
``summarize`` SIGKILLs its own process the first time it runs (MARKER records that it did).
The script prints the invoke result as JSON.
"""

from __future__ import annotations

import json
import operator
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from letitloop.adapters.langgraph import LetItLoopCheckpointSaver


class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]
    verdict: str
    summary: str
    published: bool


def build(saver: Any, log: Path, marker: Path | None = None) -> Any:
    """The compiled graph; ``marker`` None never kills."""

    def logged(name: str) -> None:
        with log.open("a") as f:
            f.write(name + "\n")

    def fetch(state: State) -> State:
        logged("fetch")
        return {"items": ["a", "b"]}

    def clean(state: State) -> State:
        logged("clean")
        return {"items": [x.upper() for x in state["items"]]}

    def review(state: State) -> State:
        logged("review")
        verdict = interrupt({"question": "publish these?", "items": state["items"]})
        return {"verdict": str(verdict)}

    def summarize(state: State) -> State:
        logged("summarize")
        if marker is not None and not marker.exists():
            marker.write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return {"summary": f"{len(state['items'])} items, {state['verdict']}"}

    def publish(state: State) -> State:
        logged("publish")
        return {"published": True}

    g = StateGraph(State)
    for fn in (fetch, clean, review, summarize, publish):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "fetch")
    g.add_edge("fetch", "clean")
    g.add_edge("clean", "review")
    g.add_edge("review", "summarize")
    g.add_edge("summarize", "publish")
    g.add_edge("publish", END)
    return g.compile(checkpointer=saver, name="pipeline")


def main(argv: list[str]) -> int:
    journal, thread, mode, log, marker = argv
    app = build(LetItLoopCheckpointSaver(journal, graph="pipeline"), Path(log), Path(marker))
    config = {"configurable": {"thread_id": thread}}
    inputs: Any = {"items": []} if mode == "start" else None
    if mode == "resume":
        inputs = Command(resume="approved")
    result = app.invoke(inputs, config, durability="sync")
    print(json.dumps(result, default=lambda o: getattr(o, "value", repr(o))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
