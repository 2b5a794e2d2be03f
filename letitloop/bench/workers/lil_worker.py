"""letitloop's worker: the scenario as one ``@durable`` run, as its docs say to write it.

Each model call is a ``step``; each side effect is fenced by ``atomic_marker`` (a kill inside it
leaves it in doubt, and the run stops naming the command a person runs); the approval is
``approval(..., wait=False)`` (the run stops, the person runs the command it names, the harness
calls the workflow again); the fan-out is ``step.map``. Restarting is calling the workflow again
with the same run id. Journal: the DuckDB file or PostgreSQL URL in the spec.

Planted bug ``lossy-journal``: the journal acknowledges appends before they are written (they
are held and written 300 ms later, in order), as a journal that dropped its fsync would: a kill
must then show acknowledged steps lost.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from letitloop import LetItLoopError, approval, atomic_marker, durable, open_journal, step
from letitloop.bench.workers import _common as c


class LossyJournal:
    """A journal that acks before writing (the planted bug): appends wait in memory."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._held: list[Sequence[Any]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._flusher, daemon=True).start()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def append(self, records: Sequence[Any], *, sync: bool = True) -> None:
        with self._lock:
            self._held.append(list(records))

    def release_run(self, run_id: str) -> None:
        self.flush()  # what it held must be written while this process still holds the run
        self._real.release_run(run_id)

    def flush(self) -> None:
        with self._lock:
            held, self._held = self._held, []
        for records in held:
            self._real.append(records, sync=True)

    def _flusher(self) -> None:
        import time

        while True:
            time.sleep(0.3)
            self.flush()


def main() -> None:
    spec = c.load_spec()
    bench = c.Bench(spec)
    location = spec["store"]["journal"]
    journal: Any = location
    if bench.planted == "lossy-journal":
        journal = LossyJournal(open_journal(location))
    plan = bench.plan

    def model(lane: str, seq: int, prompt: str) -> str:
        return str(bench.model(lane, seq, prompt)["text"])

    def item(arg: list[Any]) -> str:
        i, prev = arg
        return str(bench.model(f"item-{i}", 0, c.item_prompt(i, prev))["text"])

    @durable(journal=journal, run_id=bench.run, name=f"bench.{bench.scenario['name']}")
    def pipeline() -> str:
        prev, last = "", ""
        items: list[str] = []
        for op in plan:
            if op["op"] == "call":
                prompt = c.reduce_prompt(op, items) if items else c.call_prompt(op, prev)
                last = step(f"{op['lane']}/{op['seq']}", model, op["lane"], op["seq"], prompt)
                prev, items = c.token_of(last), []
            elif op["op"] == "effect":
                with atomic_marker(f"{op['kind']}-{op['to']}") as first:
                    if first:
                        bench.effect(op, prev)
            elif op["op"] == "ask":
                approval(op["name"], {"draft": prev}, wait=False)
            elif op["op"] == "fanout":
                args = [[i, prev] for i in range(int(op["items"]))]
                outs = step.map("items", item, args, max_in_flight=int(op["parallel"]))  # type: ignore[attr-defined]
                items = [c.token_of(o) for o in outs]
        return last

    try:
        answer = pipeline()
    except LetItLoopError as exc:
        c.report_errors(bench, exc)
        if isinstance(journal, LossyJournal):
            journal.flush()
        os._exit(3)
    if isinstance(journal, LossyJournal):
        journal.flush()
    bench.answer(answer)
    os._exit(0)


if __name__ == "__main__":
    main()
