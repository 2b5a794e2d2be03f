"""``lil watch``: run a script as a child process and bring it back whenever it crashes.

Restarts follow a ``RestartPolicy``; each one is journaled (a ``restart`` record) against the runs
the crashed process had started, so dashboards show why a run has several tries. Ctrl+C and
SIGTERM go to the child and end the watch: nothing is restarted after a stop on purpose.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from letitloop.kernel._restarts import RestartPolicy, Supervisor, shell_code


def watch(argv: list[str], policy: RestartPolicy, journal: Path | None = None) -> int:
    """Run ``python *argv`` under supervision; return the exit status for the shell."""
    env = dict(os.environ)
    if journal is not None:
        env["LIL_JOURNAL"] = str(journal)
    what = " ".join(argv[:2] if argv[0] == "-m" else argv[:1])
    me = f"{os.getpid()}@{socket.gethostname()}"

    def start() -> subprocess.Popen[bytes]:
        # its own process group: a terminal's Ctrl+C reaches the child once, forwarded by us
        return subprocess.Popen([sys.executable, *argv], env=env, process_group=0)

    def on_crash(child: subprocess.Popen[bytes], reason: str, restart: int) -> None:
        if journal is not None:
            journal_restart(journal, child.pid, f"lil watch {me}", f"{what} {reason}", restart)

    sup = Supervisor(policy, start, what, on_crash=on_crash)
    received: list[int] = []

    def forward(signum: int, frame: Any) -> None:
        received.append(signum)
        sup.stop(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = sup.run()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if received:
        return 128 + received[0]
    return shell_code(code) if code != 0 or not sup.tripped else 1


def journal_restart(journal: Path, pid: int, by: str, reason: str, restart: int) -> list[str]:
    """Record a restart against each run the process ``pid`` started; best effort (a journal
    that does not exist yet is not created, and journaling never stops the watch)."""
    if not journal.exists():
        return []
    from letitloop.errors import LetItLoopError
    from letitloop.journal import open_journal

    label = f"{pid}@{socket.gethostname()}".replace("'", "''")
    try:
        j = open_journal(journal)
        try:
            sql = getattr(j, "sql", None)  # a SQL view of the journal; backends without one skip
            if sql is None:
                return []
            rows = sql(
                f"SELECT DISTINCT run_id FROM events WHERE kind = 'run' AND data->>'by' = '{label}'"
            )["rows"]
            runs = [r[0] for r in rows]
            for run_id in runs:
                j.note_restart(run_id, by, f"restart {restart}: {reason}")
            return runs
        finally:
            j.close()
    except (LetItLoopError, OSError) as exc:
        print(f"lil watch: could not journal the restart: {exc}", file=sys.stderr)
        return []
