"""Write the matrix scenario into a project's journal (``LIL_JOURNAL``), in real processes.

``python scenario.py PROJECT first WHO...``: the base runs (completed, failed, cancelled,
waiting for an approval, a fork, a pending splice proposal, a completed task) and, for each
acting surface WHO, its own targets (two approvals, a dead letter, a fork source is shared, two
proposals on a file of its own; the splicer's API gets two proposals too); then the runs that
must die are left blocked (one inside a step, one per WHO inside a side effect) and ``ready`` is
printed: the test SIGKILLs this process there.

``python scenario.py PROJECT second``: a second process completes the run whose attempt was
killed (its gate is opened), then stays until every notification is delivered or failed (on
PostgreSQL a client delivers, and this one is configured to).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

project = Path(sys.argv[1])
os.chdir(project)
sys.path.insert(0, str(project))

import flows  # type: ignore[import-not-found]  # noqa: E402

from letitloop import operate  # noqa: E402
from letitloop.errors import LetItLoopError  # noqa: E402
from letitloop.journal import open_journal  # noqa: E402

APP = 'def greet(name):\n    return f"Hello, {name}"\n\n\ndef bye(name):\n    return "Bye"\n'
DEADLINE = 90.0


def first(surfaces: list[str]) -> None:
    journal = open_journal()
    flows.ok()
    for call in (flows.broken, flows.halted):
        try:
            call()
        except Exception:  # their failure is journaled: that is the point
            pass
    operate.cancel_run(journal, "flows.halted:g", by="scenario", reason="wrong customer")
    for who in ["base", *surfaces]:
        try:
            flows.asks(who)
        except LetItLoopError:
            pass
    for who in surfaces:
        try:
            flows.asks(f"no-{who}")
        except LetItLoopError:
            pass
        try:
            flows.dead(who)
        except LetItLoopError:
            pass
    operate.fork(journal, "flows.ok:a", "sum", by="scenario", key="base")
    operate.propose_splice(
        journal, "app.py", "greet", 'def greet(name):\n    return f"Hi, {name}!"\n', by="scenario"
    )
    (project / "apps").mkdir(exist_ok=True)
    for who in [*surfaces, "splicer"]:  # the splicer's own API decides two proposals too
        path = project / "apps" / f"{who}.py"
        path.write_text(APP)
        for target, code in (
            ("greet", f'def greet(name):\n    return f"Hi from {who}, {{name}}"\n'),
            ("bye", f'def bye(name):\n    return "Bye from {who}"\n'),
        ):
            operate.propose_splice(journal, path, target, code, by="scenario", reason=target)
    from letitloop.tasks import run_task

    run_task(project, "write")
    blocked = [(flows.slow, ())] + [(flows.effect, (who,)) for who in ["base", *surfaces]]
    for fn, args in blocked:
        threading.Thread(target=fn, args=args, daemon=True).start()
    wanted = {"flows.slow:d": "wait"} | {
        f"flows.effect:c-{who}": "send_email" for who in ["base", *surfaces]
    }
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        inside = 0
        for run_id, name in wanted.items():
            try:
                attempts = journal.get_run(run_id).attempts
            except LetItLoopError:
                continue
            inside += any(a.name == name and a.status == "started" for a in attempts)
        if inside == len(wanted):
            break
        time.sleep(0.02)
    print("ready", flush=True)
    time.sleep(600)


def second() -> None:
    flows.GATE.touch()
    assert flows.slow() == "opened"
    journal = open_journal()
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        notices = journal.notifications(limit=1000)
        states = {n.state for n in notices}
        if notices and "pending" not in states and {"delivered", "failed"} <= states:
            break
        time.sleep(0.05)
    else:
        raise SystemExit(f"notifications did not settle: {[(n.event, n.state) for n in notices]}")
    print("done", flush=True)


if __name__ == "__main__":
    if sys.argv[2] == "first":
        first(sys.argv[3:])
    else:
        second()
