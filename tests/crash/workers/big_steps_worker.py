"""A durable run whose steps return large outputs, to fill a small disk (tests/trust).

    python big_steps_worker.py JOURNAL STEPS OUTPUT_BYTES

Prints ``EXEC <i>`` when step i's function runs, ``S <i>`` once ``step()`` returned
(acknowledged), then ``RESULT <total length>``, or ``ERROR <type>: <message>`` (exit 4).
"""

import sys

from letitloop import durable, step

journal, n_steps, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def work(i: int) -> str:
    print(f"EXEC {i}", flush=True)
    return f"{i:08d}" + "x" * size


@durable(journal=journal, run_id="big", name="big")
def big() -> int:
    total = 0
    for i in range(n_steps):
        total += len(step(f"s{i}", work, i))
        print(f"S {i}", flush=True)
    return total


try:
    print(f"RESULT {big()}", flush=True)
except Exception as exc:
    print(f"ERROR {type(exc).__name__}: {str(exc).replace(chr(10), ' | ')}", flush=True)
    sys.exit(4)
