"""LangGraph's worker: the scenario as a StateGraph, checkpointed after every node.

One node per operation of the plan; the fan-out is ``Send`` to an item node, run in parallel
(``max_concurrency``); the approval is a node that asks the person and waits for the decision.
The checkpointer is ``SqliteSaver`` or ``PostgresSaver`` (per the spec), with
``durability="sync"`` (the checkpoint is written before the next node starts). Restarting is
what LangGraph's docs say: a thread with a checkpoint is resumed with ``invoke(None)`` on the
same thread id (a finished thread then returns its state).
"""

from __future__ import annotations

import operator
import os
import sqlite3
from contextlib import AbstractContextManager, nullcontext
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from letitloop.bench.workers import _common as c


class State(TypedDict, total=False):
    prev: str
    last: str
    items: Annotated[list[list[Any]], operator.add]
    reduced: int
    qid: int


def build(bench: c.Bench) -> Any:
    graph = StateGraph(State)
    names: list[str] = []
    plan = bench.plan
    fan: dict[str, Any] = {}
    for i, op in enumerate(plan):
        name = f"op{i}"
        if op["op"] == "call":

            def call(state: State, op: dict[str, Any] = op) -> dict[str, Any]:
                items = state.get("items") or []
                fresh = items[state.get("reduced", 0) :]
                if fresh:
                    toks = [t for _, t in sorted(fresh)]
                    prompt = c.reduce_prompt(op, toks)
                else:
                    prompt = c.call_prompt(op, state.get("prev", ""))
                text = str(bench.model(op["lane"], op["seq"], prompt)["text"])
                return {"prev": c.token_of(text), "last": text, "reduced": len(items)}

            graph.add_node(name, call)
        elif op["op"] == "effect":

            def effect(state: State, op: dict[str, Any] = op) -> dict[str, Any]:
                bench.effect(op, state.get("prev", ""))
                return {}

            graph.add_node(name, effect)
        elif op["op"] == "ask":

            def ask(state: State, op: dict[str, Any] = op) -> dict[str, Any]:
                return {"qid": bench.ask(op)}

            def wait(state: State) -> dict[str, Any]:
                bench.wait_decision(int(state["qid"]))
                return {}

            graph.add_node(name, ask)
            graph.add_node(f"{name}-wait", wait)
            names.append(name)
            name = f"{name}-wait"
        else:
            fan = op

            def item(arg: dict[str, Any]) -> dict[str, Any]:
                i, prev = arg["i"], arg["prev"]
                text = str(bench.model(f"item-{i}", 0, c.item_prompt(i, prev))["text"])
                return {"items": [[i, c.token_of(text)]]}

            graph.add_node("item", item)  # type: ignore[arg-type]  # a Send payload
            name = "item"
        names.append(name)
    graph.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        if b == "item":

            def sends(state: State) -> list[Send]:
                n = int(fan["items"])
                return [Send("item", {"i": i, "prev": state.get("prev", "")}) for i in range(n)]

            graph.add_conditional_edges(a, sends, ["item"])
        else:
            graph.add_edge(a, b)
    graph.add_edge(names[-1], END)
    return graph


def saver(spec: dict[str, Any]) -> AbstractContextManager[Any]:
    store = spec["store"]
    if store.get("dsn"):
        from langgraph.checkpoint.postgres import PostgresSaver

        cm: AbstractContextManager[Any] = PostgresSaver.from_conn_string(store["dsn"])
        return cm
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(store["sqlite"], check_same_thread=False, timeout=60)
    return nullcontext(SqliteSaver(conn))


def main() -> None:
    spec = c.load_spec()
    bench = c.Bench(spec)
    parallel = max([int(op.get("parallel", 1)) for op in bench.plan] + [1])
    config: dict[str, Any] = {
        "configurable": {"thread_id": bench.run},
        "recursion_limit": 10_000,
        "max_concurrency": parallel,
    }
    with saver(spec) as checkpointer:
        checkpointer.setup()
        app = build(bench).compile(checkpointer=checkpointer)
        # a thread with a checkpoint resumes with invoke(None), finished or not: its
        # get_state().next is empty while the last node's writes wait for the next checkpoint,
        # though that node's successors have not run (resuming only "while next" skips them)
        if app.get_state(config).values:
            out = app.invoke(None, config, durability="sync")
        else:
            out = app.invoke({"prev": "", "items": [], "reduced": 0}, config, durability="sync")
    bench.answer(str(out["last"]))
    os._exit(0)


if __name__ == "__main__":
    main()
