"""Workflows the PostgreSQL real-part tests run in real subprocesses (journal: argv[2], a URL).

    python pg_worker.py lease URL RUN_ID STEPS           steps of $PG_WORKER_PAUSE s; "X i" as a
                                                         step runs, "S i" once step() returned
    python pg_worker.py approve URL RUN_ID               asks approval "ship", blocks for the answer

Prints READY once connected, then RESULT <json> or ERROR <type> <message> (exit status 3).
"""

from __future__ import annotations

import json
import os
import sys
import time

from letitloop import approval, durable, open_journal, step

mode, url, run_id = sys.argv[1], sys.argv[2], sys.argv[3]


def work(i: int, acc: int) -> int:
    print(f"X {i}", flush=True)
    time.sleep(float(os.environ.get("PG_WORKER_PAUSE", "0.01")))
    return acc + i


@durable(journal=url, run_id=run_id, name="lease", lock_timeout=120)
def lease(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = step(f"s{i}", work, i, acc)
        print(f"S {i}", flush=True)
    return acc


@durable(journal=url, run_id=run_id, name="approve")
def approve() -> dict[str, object]:
    draft = step("draft", lambda: {"title": "v2"})
    d = approval("ship", draft)
    done = step("ship", lambda ok: "shipped" if ok else "held", d.approved)
    return {"approved": d.approved, "by": d.by, "comment": d.comment, "done": done}


open_journal(url)
print("READY", flush=True)
try:
    if mode == "lease":
        result: object = lease(int(sys.argv[4]))
    else:
        result = approve()
    print(f"RESULT {json.dumps(result)}", flush=True)
except Exception as exc:
    print(f"ERROR {type(exc).__name__} {' '.join(str(exc).split())}", flush=True)
    sys.exit(3)
