"""One durable run of N steps, for the owner-robustness tests (tests/trust) and chaos tests.

    python steps_worker.py JOURNAL RUN_ID STEPS STEP_SLEEP SIDE_EFFECT_FILE

Each step appends "<index> <pid>" (fsynced) to the side-effect file, then sleeps; the worker
prints ``S <index>`` once ``step()`` returned (acknowledged), ``RESULT <value>`` at the end, or
``ERROR <type>: <message>`` (and exits 4) if the run raised. Prints READY once connected.
"""

import os
import sys
import time

from letitloop import durable, open_journal, step

journal, run_id, n_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
step_sleep, side = float(sys.argv[4]), sys.argv[5]


def work(index: int, acc: int) -> int:
    with open(side, "a") as f:
        f.write(f"{index} {os.getpid()}\n")
        f.flush()
        os.fsync(f.fileno())
    time.sleep(step_sleep)
    return (acc * 7 + index) % 1_000_003


@durable(journal=journal, run_id=run_id, name="steps", lock_timeout=30)
def steps() -> int:
    acc = 1
    for i in range(n_steps):
        acc = step(f"s{i}", work, i, acc)
        print(f"S {i}", flush=True)
    return acc


def expected(n: int) -> int:
    acc = 1
    for i in range(n):
        acc = (acc * 7 + i) % 1_000_003
    return acc


if __name__ == "__main__":
    try:
        open_journal(journal)
        print("READY", flush=True)
        print(f"RESULT {steps()}", flush=True)
    except Exception as exc:
        message = str(exc).replace("\n", " | ")
        print(f"ERROR {type(exc).__name__}: {message}", flush=True)
        sys.exit(4)
