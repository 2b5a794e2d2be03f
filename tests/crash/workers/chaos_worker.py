"""A 30-step durable workflow that test_kill_chaos SIGKILLs and relaunches over and over.

    python chaos_worker.py JOURNAL SIDE_EFFECT_FILE

Each step appends "<index> <pid>:<attempt>\\n" to the side-effect file (fsynced inside the
step, first thing), sleeps, and returns a value chained from the previous step's output, so a
wrong replay changes the final result. The workflow also sleeps between steps so kills land
outside steps too. Prints READY once connected to the journal, then RESULT <value>.
"""

import os
import sys
import time

from letitloop import current_step, durable, open_journal, step

N_STEPS = 30
STEP_SLEEP = 0.040
GAP_SLEEP = 0.008
RUN_ID = "chaos"
NAME = "chaos"

journal, side_file = sys.argv[1], sys.argv[2]


def chain(index: int, prev: int) -> int:
    return (prev * 31 + index * 7 + 1) % 1_000_000_007


executed = set()  # indices whose step ran in this process (not replayed)


def work(index: int, prev: int) -> int:
    executed.add(index)
    attempt = current_step().attempt
    with open(side_file, "a") as f:
        f.write(f"{index} {os.getpid()}:{attempt}\n")
        f.flush()
        os.fsync(f.fileno())
    time.sleep(STEP_SLEEP)
    return chain(index, prev)


@durable(journal=journal, run_id=RUN_ID, name=NAME, lock_timeout=10)
def chaos() -> int:
    value = 17
    for i in range(N_STEPS):
        value = step(f"step-{i}", work, i, value)
        if i in executed:  # workflow code between steps; replay stays fast
            time.sleep(GAP_SLEEP)
    return value


open_journal(journal)  # connect (starting the owner if needed) before announcing readiness
print("READY", flush=True)
print(f"RESULT {chaos()}", flush=True)
