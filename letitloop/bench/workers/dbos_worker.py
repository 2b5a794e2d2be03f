"""DBOS's worker: the scenario as a ``@DBOS.workflow`` of ``@DBOS.step`` calls.

Each model call, side effect, question and wait for the decision is a step (its output is
committed to DBOS's system database, SQLite or PostgreSQL per the spec); the fan-out enqueues a
child workflow per item on a ``Queue`` of ``parallel`` (polled every 0.1 s, not the default 1 s,
so DBOS is not charged for a poll interval one would shorten). Restarting is what DBOS's docs
say: ``DBOS.launch()`` recovers this executor's pending workflows; the worker then waits for the
run's result (or starts it, if the kill came before its row was written).
"""

from __future__ import annotations

import os
from typing import Any

from dbos import DBOS, SetWorkflowID

from letitloop.bench.workers import _common as c


def main() -> None:
    spec = c.load_spec()
    bench = c.Bench(spec)
    store = spec["store"]
    url = store.get("dsn") or f"sqlite:///{store['sqlite']}"
    DBOS(
        config={
            "name": "lilbench",
            "system_database_url": url,
            "application_version": "lil-bench-1",
            "executor_id": "lil-bench",
            "log_level": "ERROR",
        }
    )
    parallel = max([int(op.get("parallel", 1)) for op in bench.plan] + [1])
    queues: dict[str, Any] = {}

    @DBOS.step()
    def model(lane: str, seq: int, prompt: str) -> str:
        return str(bench.model(lane, seq, prompt)["text"])

    @DBOS.step()
    def effect(op: dict[str, Any], memo: str) -> str:
        return bench.effect(op, memo)

    @DBOS.step()
    def ask(op: dict[str, Any]) -> int:
        return bench.ask(op)

    @DBOS.step()
    def decision(qid: int) -> bool:
        return bench.wait_decision(qid)

    @DBOS.workflow()
    def item(i: int, prev: str) -> str:
        return str(model(f"item-{i}", 0, c.item_prompt(i, prev)))

    @DBOS.workflow()
    def pipeline() -> str:
        prev, last = "", ""
        items: list[str] = []
        for op in bench.plan:
            if op["op"] == "call":
                prompt = c.reduce_prompt(op, items) if items else c.call_prompt(op, prev)
                last = model(op["lane"], op["seq"], prompt)
                prev, items = c.token_of(last), []
            elif op["op"] == "effect":
                effect(op, prev)
            elif op["op"] == "ask":
                decision(ask(op))
            elif op["op"] == "fanout":
                queue = queues["items"]
                handles = [queue.enqueue(item, i, prev) for i in range(int(op["items"]))]
                items = [c.token_of(h.get_result()) for h in handles]
        return last

    DBOS.launch()
    queues["items"] = DBOS.register_queue("items", concurrency=parallel, polling_interval_sec=0.1)
    if DBOS.get_workflow_status(bench.run) is None:
        with SetWorkflowID(bench.run):
            handle = DBOS.start_workflow(pipeline)
    else:
        handle = DBOS.retrieve_workflow(bench.run)
    answer = handle.get_result(polling_interval_sec=0.05)
    bench.answer(str(answer))
    os._exit(0)


if __name__ == "__main__":
    main()
