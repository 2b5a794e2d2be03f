"""Increments a blackboard counter N times with compare-and-swap, racing another process.

    python counter_worker.py JOURNAL RUN_ID N

Each increment reads ``counter`` (outside any run: straight from the journal), waits a little so
the other process can write in between, and puts value + 1 with ``expect=`` the version read; a
``BoardConflictError`` means the other process wrote first: read again and retry. Prints
``CONFLICTS <n>`` at the end.
"""

import sys
import time

from letitloop.errors import BoardConflictError
from letitloop.memory import blackboard

journal, run_id, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
board = blackboard(run_id, journal=journal)
conflicts = 0
for _ in range(n):
    while True:
        entry = board.get("counter")
        assert entry is not None
        time.sleep(0.005)
        try:
            board.put("counter", entry.value + 1, expect=entry.version)
            break
        except BoardConflictError as exc:
            assert exc.key == "counter" and exc.current > entry.version
            conflicts += 1
print(f"CONFLICTS {conflicts}", flush=True)
