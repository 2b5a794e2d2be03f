"""A workflow started by several processes at the same instant, for test_locks.

    python lock_worker.py JOURNAL RUN_KEY STEPS STEP_SLEEP LINES_FILE GO_FILE LOCK_TIMEOUT

Connects to the journal, prints READY, then waits for GO_FILE (written atomically by the test;
it holds a wall-clock start time) and sleeps until that instant, so all workers call the run
together. Each step appends "<pid> <index>" (fsynced) to LINES_FILE. Prints
``RESULT <value> <seconds>`` and exits 0, or ``LOCKED <seconds>`` and exits 3 on RunLockedError.
"""

import os
import sys
import time

from letitloop import RunLockedError, durable, open_journal, step

journal, key, lines = sys.argv[1], sys.argv[2], sys.argv[5]
n_steps, step_sleep = int(sys.argv[3]), float(sys.argv[4])
go_file, lock_timeout = sys.argv[6], float(sys.argv[7])
LOCKED_EXIT = 3


def work(index: int, acc: int) -> int:
    with open(lines, "a") as f:
        f.write(f"{os.getpid()} {index}\n")
        f.flush()
        os.fsync(f.fileno())
    time.sleep(step_sleep)
    return acc * 3 + index


@durable(journal=journal, run_id=key, name="locks", lock_timeout=lock_timeout)
def workflow() -> int:
    acc = 1
    for i in range(n_steps):
        acc = step(f"s{i}", work, i, acc) % 1_000_000_007
    return acc


open_journal(journal)
print("READY", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(go_file):
    if time.monotonic() > deadline:
        sys.exit("no go file")
    time.sleep(0.0005)
with open(go_file) as f:
    start_at = float(f.read())
time.sleep(max(0.0, start_at - time.time()))
t0 = time.monotonic()
try:
    value = workflow()
except RunLockedError:
    print(f"LOCKED {time.monotonic() - t0:.4f}", flush=True)
    sys.exit(LOCKED_EXIT)
print(f"RESULT {value} {time.monotonic() - t0:.4f}", flush=True)
