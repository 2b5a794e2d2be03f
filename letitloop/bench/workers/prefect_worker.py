"""Prefect 3's worker: the scenario as a ``@flow`` of ``@task`` calls with persisted results.

Every task persists its result and is cached by a key made of the run id and the operation's
place in the plan, so calling the flow again (a new flow run: Prefect has no resume of a
crashed flow run without a deployment) takes every finished task's result from storage instead
of running it. The fan-out submits an item task per item to a thread pool of ``parallel``
workers. The approval is a task that asks the person and a task that waits for the decision.
The API server is the harness's (``PREFECT_API_URL``), not one per process.
"""

from __future__ import annotations

import os
from typing import Any

from prefect import flow, task
from prefect.task_runners import ThreadPoolTaskRunner

from letitloop.bench.workers import _common as c


def main() -> None:
    spec = c.load_spec()
    bench = c.Bench(spec)
    parallel = max([int(op.get("parallel", 1)) for op in bench.plan] + [1])

    def key(_ctx: Any, params: dict[str, Any]) -> str:
        return f"{bench.run}-{params['where']}"

    cached = task(persist_result=True, cache_key_fn=key)

    @cached
    def model(where: str, lane: str, seq: int, prompt: str) -> str:
        return str(bench.model(lane, seq, prompt)["text"])

    @cached
    def effect(where: str, op: dict[str, Any], memo: str) -> str:
        return bench.effect(op, memo)

    @cached
    def ask(where: str, op: dict[str, Any]) -> int:
        return bench.ask(op)

    @cached
    def decision(where: str, qid: int) -> bool:
        return bench.wait_decision(qid)

    @flow(persist_result=True, task_runner=ThreadPoolTaskRunner(max_workers=parallel))
    def pipeline() -> str:
        prev, last = "", ""
        items: list[str] = []
        for n, op in enumerate(bench.plan):
            where = f"op{n}"
            if op["op"] == "call":
                prompt = c.reduce_prompt(op, items) if items else c.call_prompt(op, prev)
                last = model(where, op["lane"], op["seq"], prompt)
                prev, items = c.token_of(last), []
            elif op["op"] == "effect":
                effect(where, op, prev)
            elif op["op"] == "ask":
                decision(f"{where}-wait", ask(where, op))
            elif op["op"] == "fanout":
                futures = [
                    model.submit(f"{where}-{i}", f"item-{i}", 0, c.item_prompt(i, prev))
                    for i in range(int(op["items"]))
                ]
                items = [c.token_of(f.result()) for f in futures]
        return last

    bench.answer(str(pipeline()))
    os._exit(0)


if __name__ == "__main__":
    main()
