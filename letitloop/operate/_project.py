"""What a surface starts in the project on someone's behalf: a coding-agent task in a detached
process, a splice proposal, a CI receipt check.

``start_task`` runs ``lil run --task NAME`` in a fresh process (the task's agents and checks
never run inside a server or an editor), after reading the task file so a mistake is refused at
once; who started it is journaled with the run (a ``restart`` note naming them), as a resume
started for someone is. ``propose_splice`` journals a pending proposal that a person applies or
rejects (an agent may propose, never apply). ``check_receipt`` verifies a signed CI receipt with
the keys of the process that asks. Each returns an ``Outcome`` (or its facts) or raises the
``LetItLoopError`` that says why, the same on every surface. ``journal_once`` opens a server's
journal on its first use (the lab's extension, ``lil mcp``), once, whichever thread asks first.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from letitloop.errors import ConfigError, JournalError, RunCancelledError, RunLockedError
from letitloop.operate._actions import Outcome, log_tail, note_started

if TYPE_CHECKING:
    from collections.abc import Callable

    from letitloop.journal import Journal, RunInfo

TASK_APPEARS = 30.0  # seconds a started task's process has to journal its run
_Host = TypeVar("_Host")


class journal_once(Generic[_Host]):  # lower case: a decorator, as functools.cached_property
    """A property whose journal is opened on first use, once per object, whichever thread asks
    first (a server whose user never opens letitloop starts no owner; two requests at once open
    one journal). An opening that raises is not kept: the next use tries again."""

    def __init__(self, opener: Callable[[_Host], Journal]) -> None:
        self.opener = opener
        self.name = opener.__name__
        self.__doc__ = opener.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, host: None, owner: type[Any] | None = None) -> journal_once[_Host]: ...
    @overload
    def __get__(self, host: _Host, owner: type[Any] | None = None) -> Journal: ...
    def __get__(self, host: _Host | None, owner: type[Any] | None = None) -> Any:
        if host is None:
            return self
        state = host.__dict__  # the opened journal lands here: later reads skip the lock
        with state.setdefault(f"_{self.name}_lock", threading.Lock()):
            if self.name not in state:
                state[self.name] = self.opener(host)
            return state[self.name]


# -- tasks ----------------------------------------------------------------------------------------


@dataclass
class TaskStart:
    """A task running in the background: its run, its process and where its output goes."""

    task: str
    run_id: str
    process: subprocess.Popen[bytes]
    log: Path
    outcome: Outcome = field(init=False)

    def __post_init__(self) -> None:
        message = (
            f"started task {self.task} as run {self.run_id} in a new process "
            f"(pid {self.process.pid}); follow it with `lil run show {self.task}`"
        )
        facts = {"task": self.task, "pid": self.process.pid, "log": str(self.log)}
        self.outcome = Outcome("task", message, self.run_id, facts)

    def tail(self, lines: int = 6) -> str:
        return log_tail(self.log, lines)


def task_command(
    location: str, name: str, root: Path, *, strict: bool = False, review: bool = False
) -> list[str]:
    """``lil run --task NAME`` in a fresh interpreter, on this journal, in ``root``."""
    command = [sys.executable, "-m", "letitloop", "--journal", location, "run", "--task", name]
    command += ["--root", str(root)]
    return command + (["--strict"] if strict else []) + (["--review"] if review else [])


def start_task(
    journal: Journal,
    name: str,
    *,
    root: str | os.PathLike[str],
    by: str,
    strict: bool = False,
    review: bool = False,
    appears: float = TASK_APPEARS,
) -> TaskStart:
    """Start (or continue) the task ``tasks/NAME.toml`` of ``root`` in a detached process.

    The task file is read first (a missing or invalid one is refused with its fix, before any
    process starts); a task that is running, done or cancelled is refused with the cause. Returns
    once the process has journaled its run, with ``by`` on the record; a process that stops before
    that is an error carrying the last lines of its output."""
    from letitloop.tasks import load_task, run_id_of

    base = Path(root).resolve()
    spec = load_task(base, name)
    run_id = run_id_of(spec.name)
    before = _task_run(journal, run_id)
    _check_startable(spec.name, run_id, before)
    if before is not None:
        note_started(journal, run_id, by, f"task {spec.name}")
    fd, log_name = tempfile.mkstemp(prefix="lil-task-", suffix=".log")
    with os.fdopen(fd, "wb") as log:
        process = subprocess.Popen(
            task_command(journal.location, spec.name, base, strict=strict, review=review),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=base,
            start_new_session=True,
        )
    started = TaskStart(spec.name, run_id, process, Path(log_name))
    if before is None:
        _await_run(journal, started, appears)
        note_started(journal, run_id, by, f"task {spec.name}")
    return started


def _task_run(journal: Journal, run_id: str) -> RunInfo | None:
    try:
        return journal.get_run(run_id).run
    except JournalError:
        return None


def _check_startable(task: str, run_id: str, info: RunInfo | None) -> None:
    if info is None:
        return
    if info.status == "running" and info.holder:
        raise RunLockedError(
            f"task {task} is running now (run {run_id}, held by {info.holder})",
            fix=f"follow it with `lil run show {task}`; cancel it with `lil run cancel {task}`",
            run_id=run_id,
        )
    if info.status == "completed":
        raise ConfigError(
            f"task {task} already completed (run {run_id})",
            fix=f"see its result with `lil run show {task}`; to run it again, reset it "
            f"(`lil runs reset {run_id}`)",
            run_id=run_id,
        )
    if info.status == "cancelled":
        why = (info.error or {}).get("message") or "cancelled"
        raise RunCancelledError(
            f"task {task} was {why}; it does not run again",
            fix=f"`lil runs reset {run_id}` starts it over",
            run_id=run_id,
        )


def _await_run(journal: Journal, started: TaskStart, seconds: float) -> None:
    """Wait until the task's process has journaled its run; raise with its output if it stopped
    (or never got there) first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _task_run(journal, started.run_id) is not None:
            return
        if started.process.poll() is not None:
            if _task_run(journal, started.run_id) is not None:
                return
            break
        time.sleep(0.05)
    code = started.process.poll()
    state = "still starting" if code is None else f"stopped with exit status {code}"
    raise ConfigError(
        f"task {started.task} did not journal its run ({state}): "
        f"{started.tail() or 'it printed nothing'}",
        fix=f"run `lil run --task {started.task}` in the project to see the whole output",
        run_id=started.run_id,
    )


# -- splice proposals -----------------------------------------------------------------------------


def propose_splice(
    journal: Journal,
    path: str | os.PathLike[str],
    target: str,
    code: str,
    *,
    by: str,
    reason: str = "",
    run: str | None = None,
) -> Outcome:
    """Journal a pending proposal to replace ``target`` (a qualified name) in ``path`` with
    ``code``; it must apply cleanly now. A person applies or rejects it (lil-tui, the lab,
    `lil splice apply ID`)."""
    from letitloop.splice import propose_splice as propose

    p = propose(path, target, code, reason=reason, run=run, by=by, journal=journal)
    message = (
        f"proposed {p.id}: replace {p.target} in {p.path}; a person applies or rejects it "
        f"(`lil splice show {p.id}`, lil-tui, the lab)"
    )
    return Outcome("propose", message, p.origin, {"proposal_id": p.id, "state": p.state})


# -- CI receipts ----------------------------------------------------------------------------------


def check_receipt(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str],
    commit: str | None = None,
    allow_failures: bool = False,
) -> dict[str, Any]:
    """Verify the signed receipt at ``path`` for the code in ``root`` (``lil receipt verify``
    without ``--rerun``: nothing is executed), with this process's keys ($LIL_RECEIPT_KEY,
    $LIL_RECEIPT_PUBLIC_KEY). The verdict as data: ``ok``, each check, the failed ones."""
    from letitloop.receipts import verify

    result = verify(path, commit=commit, allow_failures=allow_failures, cwd=root)
    data: dict[str, Any] = result.to_dict()
    failed = result.failed_names
    data["message"] = (
        "the receipt proves what it claims"
        if result.ok
        else f"the receipt fails {len(failed)} check(s): {', '.join(failed)}"
    )
    return data
