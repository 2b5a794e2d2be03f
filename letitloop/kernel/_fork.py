"""Fork and rewind: try a run again from step k, with the same or new arguments.

    fork = fork_run("pipeline.main:4f0c…", from_step="summarize", args=["customer-7"])
    fork.run()   # or `lil runs resume <fork.run_id>`: steps before "summarize" replay

``fork_run`` makes a new run whose journal holds the source run's journaled results of every step
before STEP (``journal._fork``), records where it was forked from, and leaves the source
untouched. A fork's key is the source's key, ``~`` and a label (``key=``, else random): a key a
call derives from its arguments never has a ``~``, and a call whose fixed run id names a fork is
refused (``ForkedRunError``), so a real call never gets a fork's steps back. Running the fork
(``run_fork``, ``ForkedRun.run``, ``lil runs fork --run`` or ``lil runs resume``) imports the
workflow as a resume does, replays the copied steps and runs from STEP on. A LangGraph thread
forks by LangGraph's own rules, from a checkpoint id (``fork_thread``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from letitloop.errors import ConfigError, ForkedRunError, JournalError
from letitloop.journal import (
    Encoded,
    ForkOrigin,
    Journal,
    check_text,
    fork_records,
    forked_from,
    plan_fork,
)
from letitloop.kernel._entry import sign_entry, verify_entry

if TYPE_CHECKING:
    from letitloop.kernel._options import JournalSpec

__all__ = ["ForkOrigin", "ForkedRun", "fork_run", "fork_thread", "forked_from", "run_fork"]

FORK_MARK = "~"  # between the source's key and the fork's label: never in a derived key


@dataclass(frozen=True)
class ForkedRun:
    """A fork made by ``fork_run``: its run id, where it came from, and how many steps it reuses."""

    run_id: str
    origin: ForkOrigin
    reused: int  # journaled steps before the fork point, replayed instead of run
    resumable: bool  # whether it can run by name (``lil runs resume``): its entry is journaled
    journal: Journal = field(repr=False, compare=False)

    def run(self, fn: Callable[..., Any] | None = None) -> Any:
        """Run the fork from its fork point on and return its result (see ``run_fork``)."""
        return run_fork(self.run_id, fn, journal=self.journal)

    def as_dict(self) -> dict[str, Any]:
        o = self.origin
        return {
            "run_id": self.run_id,
            "forked_from": o._asdict(),
            "reused": self.reused,
            "resumable": self.resumable,
        }


def fork_run(
    run_id: str,
    from_step: int | str,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    journal: JournalSpec = None,
    key: str | None = None,
    by: str | None = None,
) -> ForkedRun:
    """Fork run ``run_id`` (an id or a unique prefix) at ``from_step``, a position or a step
    name (its first position), into a new run that reuses every journaled step before it.

    ``args``/``kwargs`` are the new call's arguments (either given: both replace the old ones);
    by default the source's. ``key`` labels the fork: its run id is ``workflow:SOURCEKEY~key``
    (by default a random label), in a namespace of its own, so no call of the workflow computes
    it. A run some process executes is refused (``RunLockedError``). The source run is never
    written to."""
    from letitloop.kernel._runtime import codec_for, resolve_journal

    jr = resolve_journal(journal)
    source = jr.find_run(run_id)
    plan = plan_fork(jr, source, from_step)
    codec = codec_for(jr)
    encoded: Encoded | None = plan.args
    if args is not None or kwargs is not None:
        new = [list(args or []), dict(kwargs or {})]
        encoded = codec.encode(new, what=f"arguments of the fork of {source}")
    label = secrets.token_hex(3) if key is None else check_text(key, "a fork's key", ConfigError)
    if not label:
        raise ConfigError("a fork's key cannot be empty", fix="leave it out (a random one is made)")
    fork_key = f"{plan.source.key}{FORK_MARK}{label}"
    check_text(fork_key, "a fork's run key", ConfigError)
    new_id = f"{plan.workflow}:{fork_key}"
    if _exists(jr, new_id):
        raise ConfigError(
            f"run {new_id} already exists: a fork needs a run of its own",
            fix="leave key= out (a fresh key is made) or pass another one",
            run_id=new_id,
        )
    entry = None
    if plan.entry is not None:  # only an authenticated entry point is carried to the fork
        verified = verify_entry(codec, source, plan.workflow, plan.entry, plan.args)
        entry = sign_entry(codec, new_id, plan.workflow, verified, encoded)
    from letitloop.journal import who

    records = fork_records(
        jr, plan, run_id=new_id, key=fork_key, args=encoded, entry=entry, by=by or who()
    )
    jr.import_records(records)
    origin = ForkOrigin(source, plan.position, plan.source.epoch, plan.step)
    resumable = entry is not None and encoded is not None
    reused = sum(1 for r in records if r["k"] in ("ok", "err", "resolve"))
    return ForkedRun(new_id, origin, reused, resumable, jr)


def _exists(journal: Journal, run_id: str) -> bool:
    try:
        journal.get_run(run_id)
    except JournalError:
        return False
    return True


def run_fork(
    run_id: str, fn: Callable[..., Any] | None = None, *, journal: JournalSpec = None
) -> Any:
    """Run a fork (or continue one) and return its result: steps before its fork point replay.

    ``fn`` is the ``@durable`` workflow to run it with (needed when its workflow was defined in
    a notebook or the REPL); without it the workflow is imported by name, as ``lil runs resume``
    does, but only from an entry point the journal's key authenticated."""
    from letitloop.kernel._resume import resume_run
    from letitloop.kernel._runtime import codec_for, resolve_journal, run_again

    jr = resolve_journal(journal)
    fork_id = jr.find_run(run_id)
    if fn is None:
        return resume_run(jr, fork_id)
    detail = jr.get_run(fork_id)
    info = detail.run
    if forked_from(jr, fork_id) is None:
        raise ConfigError(
            f"run {fork_id} is not a fork",
            fix="call the workflow as usual to run it, or fork it first with fork_run",
            run_id=fork_id,
        )
    if detail.args is None:
        raise ConfigError(
            f"fork {fork_id} has no journaled arguments to run it with",
            fix="fork it again with args= (JSON-encodable or authenticated values)",
            run_id=fork_id,
        )
    codec = codec_for(jr)
    decoded: Any = codec.decode(*detail.args, what=f"arguments of run {fork_id}")
    _, call = run_again(fn, info.workflow, decoded[0], decoded[1], jr, key=info.key)
    return call()


def fork_key(journal: Journal, run_id: str) -> str | None:
    """For ``resume_run``: the key to run ``run_id`` under when it is a fork (run as a fork
    whatever its arguments compute, even when a fork made before forks had a namespace of their
    own took a key a call computes), else None."""
    if forked_from(journal, run_id) is None:
        return None
    return run_id[len(journal.get_run(run_id).run.workflow) + 1 :]


def refuse_fork(journal: Journal, workflow: str, run_id: str) -> None:
    """Raise ``ForkedRunError`` if ``run_id``, which a call of ``workflow`` computed, is a
    fork's: its reused steps were computed for the run it was forked from, and the call must
    not get them back (a fork made before forks had keys of their own could take such an id)."""
    origin = forked_from(journal, run_id)
    if origin is None:
        return
    at = _at(origin)
    raise ForkedRunError(
        f"this call of {workflow} computed run id {run_id}, which is a fork of {origin.run_id} "
        f"made at {at}: its steps before {at} are {origin.run_id}'s results, not this call's",
        fix=f"run the fork itself with `lil runs resume {run_id}` (or letitloop.run_fork); give "
        "this call a run id of its own (run_id=). Forks made now have keys of their own "
        f"(the source's key, {FORK_MARK!r} and a label), which no call computes",
        run_id=run_id,
        origin=origin.run_id,
    )


def _at(origin: ForkOrigin) -> str:
    if origin.step:
        return f"{origin.step!r} (position {origin.position})"
    return f"position {origin.position}"


def describe_origin(run_id: str, origin: ForkOrigin) -> str:
    """``RUN is a fork of SOURCE at 'step' (position 2): …``, the note a fork's resume shows."""
    return (
        f"{run_id} is a fork of {origin.run_id} at {_at(origin)}: the steps before it replay "
        f"the results {origin.run_id} journaled (epoch {origin.epoch})"
    )


def fork_thread(
    graph: Any,
    thread_id: str,
    checkpoint_id: str,
    *,
    new_thread_id: str | None = None,
    values: Any = None,
    as_node: str | None = None,
) -> dict[str, Any]:
    """Fork a LangGraph thread at a checkpoint, by LangGraph's own semantics; return the config
    to invoke: ``graph.invoke(None, config)`` runs from that checkpoint on.

    The thread's checkpoints are copied to a new thread (``new_thread_id``, by default
    ``<thread_id>~<random>``), so the original thread keeps its history and its latest state;
    with ``values`` the fork first applies ``graph.update_state`` at that checkpoint (as
    ``as_node``), which makes the changed state a new checkpoint of the fork."""
    saver: Any = getattr(graph, "checkpointer", None)
    jr = getattr(saver, "journal", None)
    if jr is None or not hasattr(saver, "copy_thread"):
        raise ConfigError(
            "fork_thread needs a graph compiled with letitloop's checkpointer",
            fix="compile it with checkpointer=LetItLoopCheckpointSaver(...)",
        )
    thread_id = str(thread_id)
    if not jr.checkpoints(thread_id=thread_id, checkpoint_id=checkpoint_id, limit=1):
        raise ConfigError(
            f"LangGraph thread {thread_id!r} has no checkpoint {checkpoint_id!r}",
            fix="list its checkpoints with graph.get_state_history(config) and pick an id",
        )
    new = new_thread_id or f"{thread_id}~{secrets.token_hex(3)}"
    if jr.checkpoints(thread_id=new, limit=1):
        raise ConfigError(
            f"LangGraph thread {new!r} already exists", fix="pass another new_thread_id"
        )
    saver.copy_thread(thread_id, new)
    config: dict[str, Any] = {
        "configurable": {"thread_id": new, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}
    }
    if values is not None:
        config = dict(graph.update_state(config, values, as_node=as_node))
    return config
