"""Write the scripted journal the MCP tests read: ``python scenario.py PROJECT``.

In the project's directory, with its journal from ``LIL_JOURNAL``: a completed run, a failed
one (with its error's fix), a dead letter, an approval waiting, a fork, a pending splice
proposal, a rate limit's bucket; then two runs are left blocked inside a step and inside a side
effect, and ``ready`` is printed: the test SIGKILLs this process there (a killed attempt, a
marker in doubt, a resumable run)."""

from __future__ import annotations

import os
import sys
import threading
import time

project = sys.argv[1]
os.chdir(project)
sys.path.insert(0, project)

import flows  # noqa: E402

from letitloop import operate  # noqa: E402
from letitloop.errors import LetItLoopError  # noqa: E402
from letitloop.journal import open_journal  # noqa: E402

flows.ok()
for call in (flows.broken, flows.dead, flows.asks):
    try:
        call()
    except LetItLoopError:
        pass
journal = open_journal()
operate.fork(journal, "flows.ok:a", "sum", by="scenario")
operate.propose_splice(
    journal, "app.py", "greet", 'def greet(name):\n    return f"Hi, {name}!"\n', by="scenario"
)
journal.take_capacity("llm", 60, 10_000, 100)
for blocked in (flows.effect, flows.slow):
    threading.Thread(target=blocked, daemon=True).start()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    starts = [
        journal.get_run(r).attempts
        for r in ("flows.effect:c", "flows.slow:d")
        if r in {i.run_id for i in journal.list_runs(limit=100)}
    ]
    names = {a.name for tries in starts for a in tries if a.status == "started"}
    if {"send_email", "wait"} <= names:
        break
    time.sleep(0.02)
print("ready", flush=True)
time.sleep(600)
