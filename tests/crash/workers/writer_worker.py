"""A writer for the owner-kill test: durable runs of many small steps, one after another.

    python writer_worker.py JOURNAL WRITER_ID STOP_FILE STEPS

Runs ``writer:w<ID>-r<N>`` for N = 0, 1, ... until STOP_FILE exists (checked between runs).
Prints ``S <run key> <index>`` right after each ``step()`` returns (the write was acknowledged)
and ``R <run key> <result>`` when a run returns. The journal owner is SIGKILLed under it; the
client must reconnect, start a new owner and carry on.
"""

import os
import sys
import time

from letitloop import durable, open_journal, step

MAX_RUNS = 40
STEP_GAP = 0.005

journal, wid, stop_file, n_steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])


def add(i: int, acc: int) -> int:
    return (acc * 7 + i + wid) % 1_000_003


def make_run(key: str):  # type: ignore[no-untyped-def]
    def body() -> int:
        acc = wid
        for i in range(n_steps):
            acc = step(f"s{i}", add, i, acc)
            print(f"S {key} {i}", flush=True)
            time.sleep(STEP_GAP)
        return acc

    return durable(journal=journal, run_id=key, name="writer", lock_timeout=30)(body)


open_journal(journal)
print("READY", flush=True)
r = 0
while r < MAX_RUNS and not os.path.exists(stop_file):
    key = f"w{wid}-r{r}"
    print(f"R {key} {make_run(key)()}", flush=True)
    r += 1
print("EXIT", flush=True)
