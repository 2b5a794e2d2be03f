"""``lil watch``: run a script as a child process and bring it back whenever it crashes.

Restarts follow a ``RestartPolicy``; each one is journaled (a ``restart`` record) against the runs
the crashed process had started, so dashboards (and ``lil runs show``) say why a run has several
tries. The runs are found through the journal's contract, on any backend: those updated since
the child started (``list_runs``, newest first) whose ``run`` events name the child's process
(``events``). Ctrl+C and SIGTERM go to the child and end the watch: nothing is restarted after
a stop on purpose.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from letitloop.kernel._restarts import RestartPolicy, Supervisor, shell_code

if TYPE_CHECKING:
    from letitloop.journal import EventInfo, Journal

FIRST_PAGE = 100  # runs read at first when looking for a crashed child's runs (doubled as needed)
EVENTS_PAGE = 1000  # events read at a time
SLACK = 1.0  # seconds: a run's update time is taken with the clock its writer read


def watch(argv: list[str], policy: RestartPolicy, journal: Path | str | None = None) -> int:
    """Run ``python *argv`` under supervision; return the exit status for the shell.
    ``journal`` is a DuckDB file or a ``postgresql://`` URL (None: restarts are not journaled)."""
    env = dict(os.environ)
    if journal is not None:
        env["LIL_JOURNAL"] = str(journal)
    what = " ".join(argv[:2] if argv[0] == "-m" else argv[:1])
    me = f"{os.getpid()}@{socket.gethostname()}"

    started: dict[int, float] = {}  # pid -> when the watch started it (epoch seconds)

    def start() -> subprocess.Popen[bytes]:
        # its own process group: a terminal's Ctrl+C reaches the child once, forwarded by us
        began = time.time()
        child = subprocess.Popen([sys.executable, *argv], env=env, process_group=0)
        started[child.pid] = began
        return child

    def on_crash(child: subprocess.Popen[bytes], reason: str, restart: int) -> None:
        if journal is not None:
            journal_restart(
                journal,
                child.pid,
                f"lil watch {me}",
                f"{what} {reason}",
                restart,
                since=started.pop(child.pid, 0.0),
            )

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


def journal_restart(
    journal: Path | str, pid: int, by: str, reason: str, restart: int, since: float = 0.0
) -> list[str]:
    """Record a restart against each run the process ``pid`` started (at ``since`` or later);
    best effort (a journal file that does not exist yet is not created, and journaling never
    stops the watch)."""
    if isinstance(journal, Path) and not journal.exists():
        return []
    from letitloop.errors import LetItLoopError
    from letitloop.journal import open_journal

    label = f"{pid}@{socket.gethostname()}"
    try:
        j = open_journal(journal)
        try:
            runs = runs_started_by(j, label, since)
            for run_id in runs:
                j.note_restart(run_id, by, f"restart {restart}: {reason}")
            return runs
        finally:
            j.close()
    except (LetItLoopError, OSError) as exc:
        print(f"lil watch: could not journal the restart: {exc}", file=sys.stderr)
        return []


def runs_started_by(journal: Journal, label: str, since: float = 0.0) -> list[str]:
    """The runs whose ``run`` events (a process opening or resuming the run) were written by the
    process ``label`` (``pid@host``), among those updated at ``since`` or later: read through
    the contract, so any backend answers, and only as far back as ``since``."""
    limit = FIRST_PAGE
    while True:
        infos = journal.list_runs(limit=limit)  # most recently updated first
        recent = [i for i in infos if i.updated >= since - SLACK]
        if len(recent) < len(infos) or len(infos) < limit:
            break
        limit *= 2
    return [
        i.run_id for i in recent if any(_opened_by(e, label) for e in _events(journal, i.run_id))
    ]


def _opened_by(event: EventInfo, label: str) -> bool:
    return event.kind == "run" and event.data.get("by") == label


def _events(journal: Journal, run_id: str) -> list[EventInfo]:
    """Every event of one run, page by page."""
    found: list[EventInfo] = []
    after = 0
    while True:
        page = journal.events(after=after, run_id=run_id, limit=EVENTS_PAGE)
        found += page
        if len(page) < EVENTS_PAGE:
            return found
        after = page[-1].seq
