"""Resume a run by name, in this process: import its workflow and call it with its arguments.

A run records its entry point (``module:qualname``, or the script's path for a workflow defined in
a script run as ``__main__``) and its encoded arguments when it starts. ``resume_run`` imports
the entry point again, decodes the arguments and calls the durable function, which replays the
journaled steps and continues. A run that cannot be resumed this way says exactly why.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from typing import Any

from letitloop.errors import ConfigError, JournalError, LetItLoopError, RunLockedError
from letitloop.journal import Journal, RunDetail, cancelled_error
from letitloop.kernel._entry import verify_entry
from letitloop.kernel._fork import fork_key
from letitloop.kernel._runtime import codec_for, run_again


def resume_run(journal: Journal, run: str) -> Any:
    """Continue run ``run`` (an id, or a unique prefix or suffix) and return its result."""
    run_id = journal.find_run(run)
    detail = journal.get_run(run_id)
    info = detail.run
    if info.status == "completed" and detail.result is not None:
        return codec_for(journal).decode(*detail.result, what=f"result of run {run_id}")
    refusal = resume_refusal(detail)
    if refusal is not None:
        raise refusal
    assert detail.entry is not None and detail.args is not None  # resume_refusal said so
    codec = codec_for(journal)
    # the journal is data: import only an entry point (and arguments) the journal's key signed
    entry = verify_entry(codec, run_id, info.workflow, detail.entry, detail.args)
    fn = load_entry(entry, run_id)
    decoded: Any = codec.decode(*detail.args, what=f"arguments of run {run_id}")
    args, kwargs = decoded
    # a fork runs under its own key, whatever a call with its arguments computes
    key = fork_key(journal, run_id)
    computed, call = run_again(fn, info.workflow, args, kwargs, journal, key=key)
    if computed != run_id:
        raise ConfigError(
            f"run {run_id} cannot be resumed by name: calling {entry} with its arguments "
            f"now gives run {computed} (the workflow's name or run_id option changed)",
            fix="call the workflow again from your code",
            run_id=run_id,
        )
    return call()


def resume_refusal(detail: RunDetail) -> LetItLoopError | None:
    """Why run ``detail`` cannot be resumed by name, or None: the one rule ``lil runs resume``,
    lil-tui, the lab and every other surface apply before they resume a run (a completed run is
    not refused here: resuming it in process returns its result)."""
    info = detail.run
    run_id = info.run_id
    if info.status == "cancelled":
        return cancelled_error(run_id, info.error)
    if info.status == "running":
        return RunLockedError(
            f"run {run_id} is executing right now, in {info.holder or 'another process'}",
            fix=f"wait for it, or stop it first: `lil runs cancel {run_id}`",
            run_id=run_id,
        )
    if info.workflow.startswith("langgraph:"):
        return ConfigError(
            f"run {run_id} is a LangGraph thread: LangGraph resumes it, not letitloop",
            fix="invoke the graph again with the same thread_id (Command(resume=...) after an "
            "interrupt)",
            run_id=run_id,
        )
    if info.parent is not None:
        return ConfigError(
            f"run {run_id} is a child run of {info.parent}; it continues when its parent does",
            fix=f"resume the parent: `lil runs resume {info.parent}`",
            run_id=run_id,
        )
    if detail.entry is None:
        return ConfigError(
            f"run {run_id} cannot be resumed by name: its workflow {info.workflow} was defined "
            "where it cannot be imported again (inside a function, in `python -c`, a notebook "
            "or the REPL)",
            fix="call the workflow again from where it was defined, or move it to a module",
            run_id=run_id,
        )
    if detail.args is None:
        return ConfigError(
            f"run {run_id} cannot be resumed by name: its arguments could not be journaled",
            fix="call the workflow again from your code with the same arguments",
            run_id=run_id,
        )
    return None


def takeover_refusal(journal: Journal, run_id: str) -> LetItLoopError | None:
    """``resume_refusal`` for a worker taking a run over: a run still marked running is allowed
    (its holder is gone; the run's lease decides who executes it), and a run not started yet
    has nothing to refuse."""
    try:
        detail = journal.get_run(run_id)
    except JournalError:
        return None
    if detail.run.status == "running":
        detail = detail._replace(run=detail.run._replace(status="interrupted"))
    return resume_refusal(detail)


_loading = threading.Lock()  # a worker's threads must not see a script half-imported


def load_entry(entry: str, run_id: str) -> Any:
    """The object named by ``module:qualname`` or ``/path/script.py:qualname``."""
    with _loading:
        return _load(entry, run_id)


def _load(entry: str, run_id: str) -> Any:
    module_name, _, qualname = entry.rpartition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: modules next to the caller
    try:
        if module_name.endswith(".py"):
            module = _load_script(module_name)
        else:
            module = importlib.import_module(module_name)
        obj: Any = module
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, OSError) as exc:
        raise ConfigError(
            f"run {run_id} cannot be resumed: importing its workflow {entry} failed: {exc}",
            fix="run from the directory the workflow was started in, or put its module on "
            "PYTHONPATH",
            run_id=run_id,
        ) from None
    return obj


def _load_script(path: str) -> Any:
    """Import a script as a module named after its file (its ``__main__`` block does not run)."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == path:
        return sys.modules[name]
    if not os.path.exists(path):
        raise ImportError(f"the script {path} no longer exists")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
