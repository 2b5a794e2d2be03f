"""A stand-in for a coding agent's CLI, deterministic: what `lil run --task` invokes here.

    python stand_in_agent.py PROMPT

Run in the task's project (work/), it edits src/calc.py as an agent that misreads the task
would: its first edit subtracts. Given the prompt again with a critique appended (what the
runner does after a failed check), it reads the critique and writes the right code.

With AGENT_KILL_RUNNER=1 it SIGKILLs the runner (its parent process) halfway through its edit,
as the OOM killer would kill `lil run`: the file is left half written.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

prompt = sys.argv[1]
calc = Path("src/calc.py")
source = calc.read_text()
op = "+" if "Critique" in prompt else "-"  # a critique says add(2, 3) returned -1
body = re.compile(r"(def add\(.*:\n)    .*\n")  # the one line of add()'s body
fixed = body.sub(rf"\g<1>    return a {op} b\n", source, count=1)
if os.environ.get("AGENT_KILL_RUNNER"):
    calc.write_text(fixed[: len(fixed) // 2])  # half an edit
    print("stand-in: SIGKILL of the runner, halfway through the edit", flush=True)
    os.kill(os.getppid(), signal.SIGKILL)
    sys.exit(1)
calc.write_text(fixed)
print(f"stand-in: wrote add() as `return a {op} b`" if fixed != source else "stand-in: no change")
