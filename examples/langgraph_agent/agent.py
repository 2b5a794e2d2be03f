"""A LangGraph agent whose checkpoints live in the letitloop journal (runs offline).

    python agent.py [--crash-at search|calc]   run the agent's thread, or resume it
    python agent.py history                     time travel: every checkpoint of the thread
    python agent.py replay STEP                 run the thread again from its checkpoint at STEP
    python agent.py fork "NOTE"                 a new thread from the checkpoint before the
                                                answer, with NOTE added to the conversation

The agent is a loop of two nodes: ``think`` asks the model what to do next (a fake model from
letitloop.testing, scripted like a tool-calling model), ``act`` runs the tool it chose (a search
and a calculator). ``LetItLoopCheckpointSaver`` keeps every checkpoint in the journal
(.letitloop/ beside this file), so the thread is also a run that ``lil runs list`` shows.

--crash-at TOOL SIGKILLs this process inside that tool, as the OOM killer would; run it again
and the thread continues from its last checkpoint: the nodes that finished do not run again.
"""

from __future__ import annotations

import operator
import os
import re
import signal
import sys
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from letitloop import fork_thread
from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
from letitloop.testing import FakeLLM

THREAD = "geneva"
QUESTION = "How long would it take to walk around Lake Geneva?"
CRASH_AT = sys.argv[sys.argv.index("--crash-at") + 1] if "--crash-at" in sys.argv else None
FACTS = {"Lake Geneva shoreline": "The shoreline of Lake Geneva is 200 km long."}


class State(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]
    answer: str


def policy(prompt: str) -> str:
    """The fake model's script: search, compute, answer (reading a note if one was added)."""
    results = re.findall(r"^tool: (.*)$", prompt, re.M)
    if not results:
        return "CALL search: Lake Geneva shoreline"
    if len(results) == 1:
        km = re.search(r"(\d+) km", results[0])
        return f"CALL calc: {km.group(1) if km else 0} / 5"  # walking at 5 km/h
    hours = float(results[1])
    per_day = re.search(r"^user: .*?(\d+) hours a day", prompt, re.M)
    if per_day:
        days = hours / int(per_day.group(1))
        return f"ANSWER: about {days:g} days, walking {per_day.group(1)} hours a day"
    return f"ANSWER: about {hours:g} hours of walking (200 km at 5 km/h)"


llm = FakeLLM(replies=policy)


def crash_here(point: str) -> None:
    """SIGKILL this process if it was started with --crash-at POINT."""
    if point == CRASH_AT:
        print(f"--crash-at {point}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def search(query: str) -> str:
    crash_here("search")
    return FACTS.get(query, "nothing found")


def calc(expression: str) -> str:
    crash_here("calc")
    a, b = (float(x) for x in expression.split("/"))
    return f"{a / b:g}"


TOOLS = {"search": search, "calc": calc}


def think(state: State) -> State:
    reply = llm.complete("\n".join(state["messages"])).text
    print(f"  think: {reply}")
    if reply.startswith("ANSWER: "):
        return {"messages": [f"assistant: {reply}"], "answer": reply.removeprefix("ANSWER: ")}
    return {"messages": [f"assistant: {reply}"]}


def act(state: State) -> State:
    tool, argument = state["messages"][-1].removeprefix("assistant: CALL ").split(": ", 1)
    result = TOOLS[tool](argument)
    print(f"  act:   {tool}({argument!r}) -> {result!r}")
    return {"messages": [f"tool: {result}"]}


def route(state: State) -> str:
    return "act" if "CALL " in state["messages"][-1] else END


def build() -> Any:
    graph = StateGraph(State)
    graph.add_node("think", think)
    graph.add_node("act", act)
    graph.add_edge(START, "think")
    graph.add_conditional_edges("think", route, ["act", END])
    graph.add_edge("act", "think")
    return graph.compile(checkpointer=LetItLoopCheckpointSaver(graph="walker"))


def config(thread: str = THREAD) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def run(app: Any) -> None:
    """Start the thread, continue it after a crash, or show its answer if it finished."""
    state = app.get_state(config())
    if state.values and not state.next:
        print(f"finished earlier: {state.values['answer']}")
        return
    if state.next:
        print(f"resuming thread {THREAD!r} at {state.next[0]!r}")
    inputs = None if state.next else {"messages": [f"user: {QUESTION}"]}
    result = app.invoke(inputs, config(), durability="sync")
    print(f"answer: {result['answer']}")


def history(app: Any) -> None:
    """Time travel: every checkpoint of the thread, newest first."""
    for snap in app.get_state_history(config()):
        step = snap.metadata["step"]
        last = (snap.values.get("messages") or ["(empty)"])[-1]
        print(f"step {step:>2}  next {','.join(snap.next) or '-':<6} {last[:60]}")


def replay(app: Any, step: int) -> None:
    """Run the thread again from its checkpoint at ``step`` (LangGraph's time travel)."""
    snap = next(s for s in app.get_state_history(config()) if s.metadata["step"] == step)
    print(f"replaying from step {step} (next: {','.join(snap.next)})")
    result = app.invoke(None, snap.config, durability="sync")
    print(f"answer: {result['answer']}")


def fork(app: Any, note: str) -> None:
    """A new thread from the checkpoint before the last ``think``, with a note added."""
    snap = next(
        s
        for s in app.get_state_history(config())
        if s.next == ("think",) and len(s.values["messages"]) == 5
    )
    checkpoint = snap.config["configurable"]["checkpoint_id"]
    forked = fork_thread(app, THREAD, checkpoint, values={"messages": [f"user: {note}"]})
    print(f"forked thread {forked['configurable']['thread_id']} at step {snap.metadata['step']}")
    result = app.invoke(None, forked, durability="sync")
    print(f"answer: {result['answer']}")
    print(f"the original thread still says: {app.get_state(config()).values['answer']}")


def main() -> int:
    args = [a for a in sys.argv[1:] if a not in ("--crash-at", CRASH_AT)]
    app = build()
    if not args:
        run(app)
    elif args[0] == "history":
        history(app)
    elif args[0] == "replay":
        replay(app, int(args[1]))
    elif args[0] == "fork":
        fork(app, args[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"model calls this process: {len(llm.calls)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
