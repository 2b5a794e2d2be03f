"""The journal's live state machine, shared by the owner process and the in-memory journal.

It holds every *loaded* run completely (header, the latest attempt at each position, the natural
keys already written), decides whether a record is new, a harmless resend or a conflict, and
grants run leases to sessions. Storage is someone else's job: the owner logs and folds the
records this state accepts, ``MemoryJournal`` just keeps them. Single-threaded by contract: the
owner calls it from its event loop only, the memory journal under a lock.
"""

from __future__ import annotations

import time

from letitloop.errors import (
    InDoubtError,
    JournalError,
    LetItLoopError,
    RunCancelledError,
    RunLockedError,
)
from letitloop.journal._records import JOURNAL_KINDS, Record, check_board, natural_key, validate
from letitloop.journal._values import RunState, StepRecord

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

INLINE_LIMIT = 64 * 1024  # larger outputs are not kept in memory; replay fetches them lazily
# records a run's own process writes: the newest one is where its current try has got to
ACTIVE_KINDS = frozenset({"step", "ok", "err", "rewind", "done", "fail", "suspend"})


class RunEntry:
    """Everything the state knows about one run."""

    def __init__(self, run_id: str, workflow: str, key: str, created: float) -> None:
        self.run_id = run_id
        self.workflow = workflow
        self.key = key
        self.created = created
        self.updated = created
        self.epoch = 0
        self.status = "running"
        self.tries = 0
        self.args: list[Any] | None = None
        self.entry: str | None = None
        self.parent: str | None = None
        self.result: tuple[str, bytes] | None = None
        self.result_shown: str | None = None  # a pickled result's repr, taken when written
        self.error: dict[str, Any] | None = None
        self.steps: dict[int, dict[str, Any]] = {}
        self.keys: set[str] = set()
        self.holder: str | None = None
        # which call of the holding session's process holds it: the lease belongs to one
        # invocation, so two threads or tasks of one process never execute the run at once
        self.invocation: str | None = None
        # after an owner restart: "pid@host" of the process that last started this running run;
        # it may still be executing it, so nobody else gets the run until it is gone
        self.orphan_of: str | None = None
        self.fenced: str | None = None  # the session whose lease was revoked (a lapsed worker)
        self.started_by: str | None = None
        self.current: str | None = None
        self.last_lsn = 0  # the owner's: position of this run's newest record in its log
        self.cost_micros = 0  # what the attempts of the current epoch cost
        self.tokens = 0
        self.saved_micros = 0  # what cache hits saved
        self.budget: tuple[int | None, int | None] | None = None  # (micro-USD, tokens) journaled
        self.busy = 0.0  # seconds the finished tries of this epoch executed
        self.try_started: float | None = None  # the current try: its start and its process's
        self.last_active: float | None = None  # newest record
        self.board: dict[str, int] = {}  # the blackboard: each key's newest version (this epoch)

    def wire(self, steps: bool = True) -> dict[str, Any]:
        """The run as ``open_run`` sends it: a msgpack-ready dict (see ``run_state``); without
        ``steps``, its header only (a look at its status and arguments before leasing it).
        ``forked`` is there when its first step is one a fork copied (fingerprint ``*``,
        ``journal._fork.ANY_INPUT``): a call that computed this id must not replay it."""
        first = self.steps.get(0)
        forked = {"forked": True} if first is not None and first.get("fp") == "*" else {}
        return forked | {
            "run": self.run_id,
            "wf": self.workflow,
            "key": self.key,
            "epoch": self.epoch,
            "status": self.status,
            "try": self.tries,
            "result": list(self.result) if self.result else None,
            "error": self.error,
            "steps": [s["wire"] for s in self.steps.values()] if steps else [],
            "cost": self.cost_micros,
            "tokens": self.tokens,
            "budget": list(self.budget) if self.budget else None,
            "args": self.args,
        }

    def active_seconds(self) -> float:
        """How long the run executed: the sum of its tries, not the time since it was created."""
        current = (self.last_active or 0.0) - (self.try_started or 0.0)
        return self.busy + max(current, 0.0)

    def steps_done(self) -> int:
        return sum(1 for s in self.steps.values() if s["status"] == "completed")


# a step in open_run's wire form: a list in StepRecord's field order (compact, quick to unpack)
_WIRE_FIELDS: tuple[str, ...] = ("pos", "att", "kind", "name", "fp", "status", "codec", "out")
_WIRE_FIELDS += ("big", "err", "next", "res")


def run_state(wire: dict[str, Any]) -> RunState:
    """Rebuild a ``RunState`` from its wire form."""
    import functools
    import operator

    rows = wire["steps"]
    if set(map(len, rows)) <= {len(_WIRE_FIELDS)}:  # a resume's 1000 rows, built at C speed
        made = map(functools.partial(tuple.__new__, StepRecord), rows)
        steps: dict[int, StepRecord] = dict(
            zip(map(operator.itemgetter(0), rows), made, strict=True)
        )
    else:
        steps = {s[0]: StepRecord._make(s) for s in rows}  # raises on the malformed row
    result = wire.get("result")
    return RunState(
        run_id=wire["run"],
        workflow=wire["wf"],
        key=wire["key"],
        epoch=wire["epoch"],
        status=wire["status"],
        attempt=wire["try"],
        result=(result[0], result[1]) if result else None,
        error=wire.get("error"),
        steps=steps,
        cost_micros=wire.get("cost", 0),
        tokens=wire.get("tokens", 0),
        budget=tuple(wire["budget"]) if wire.get("budget") else None,
        args=(args[0], args[1]) if (args := wire.get("args")) else None,
        forked=bool(wire.get("forked")),
    )


def holder_label(session: str) -> str:
    """Sessions are 'pid@host/random'; people see 'pid@host'."""
    return session.split("/", 1)[0]


class JournalState:
    """Loaded runs, leases and record validation. See the module docstring."""

    def __init__(self, inline_limit: int = INLINE_LIMIT) -> None:
        self.runs: dict[str, RunEntry] = {}
        self.inline_limit = inline_limit

    # -- leases -------------------------------------------------------------------------------

    def lease_holder(self, run_id: str) -> str | None:
        entry = self.runs.get(run_id)
        return entry.holder if entry else None

    def release(self, run_id: str, session: str, invocation: str | None = None) -> None:
        """Give a lease back; only its invocation may (a refused second call must not)."""
        entry = self.runs.get(run_id)
        if entry is not None and entry.holder == session:
            if invocation is not None and entry.invocation not in (None, invocation):
                return
            entry.holder, entry.invocation = None, None

    def release_session(self, session: str) -> list[str]:
        freed = [e.run_id for e in self.runs.values() if e.holder == session]
        for run_id in freed:
            self.runs[run_id].holder = None
            self.runs[run_id].invocation = None
        return freed

    def relock(
        self, run_ids: list[str], session: str, invocations: dict[str, str] | None = None
    ) -> None:
        """Re-take leases after a reconnect (the owner restarted); fails if someone else has one."""
        for run_id in run_ids:
            holder = self.lease_holder(run_id)
            entry = self.runs.get(run_id)  # (a run this state never heard of is not taken)
            if holder not in (None, session) or (entry is not None and entry.fenced == session):
                raise RunLockedError(
                    f"run {run_id} was taken over by {holder_label(holder or 'another worker')} "
                    "while the journal owner restarted; this process stops executing it",
                    fix="let the other process finish, then call the workflow again",
                    run_id=run_id,
                )
        for run_id in run_ids:
            if run_id in self.runs:
                self.runs[run_id].holder = session
                self.runs[run_id].orphan_of = None
                self.runs[run_id].invocation = (invocations or {}).get(run_id)

    # -- runs ---------------------------------------------------------------------------------

    def begin(
        self, req: dict[str, Any], session: str
    ) -> tuple[dict[str, Any] | None, list[Record]]:
        """``open_run``: the run's wire form (None if unknown, not leasing) and records to write."""
        run_id = req["run"]
        entry = self.runs.get(run_id)
        done = entry is not None and entry.status == "completed" and not req.get("reopen")
        if done or not req.get("lease", True):
            return (entry.wire(not req.get("head")) if entry else None), []
        if entry is not None and entry.status == "cancelled":
            raise cancelled_error(entry.run_id, entry.error)
        if entry is not None and entry.holder not in (None, session):
            raise RunLockedError(
                f"run {run_id} is being executed by {holder_label(entry.holder)}",
                fix="wait for it to finish (or pass lock_timeout= to wait), or kill that process",
                run_id=run_id,
            )
        invocation = req.get("inv")
        if (
            entry is not None
            and entry.holder == session
            and entry.invocation not in (None, invocation)
        ):
            raise RunLockedError(
                f"run {run_id} is being executed by another call in this process "
                f"({holder_label(session)}): another thread or task called it with the same "
                "run identity",
                fix="wait for that call to finish (or pass lock_timeout= to wait), or give the "
                "calls different arguments or run_id=",
                run_id=run_id,
            )
        if entry is not None and entry.orphan_of is not None:
            from letitloop.journal._queues import process_alive  # (not on a client's path)

            if entry.orphan_of != holder_label(session) and process_alive(entry.orphan_of):
                raise RunLockedError(
                    f"run {run_id} was being executed by {entry.orphan_of} when the journal "
                    "owner restarted, and that process is still alive",
                    fix="wait for it to finish (or pass lock_timeout= to wait), or kill it",
                    run_id=run_id,
                )
            entry.orphan_of = None
        rec: Record = {
            "k": "run",
            "run": run_id,
            "wf": req["wf"],
            "key": req["key"],
            "epoch": entry.epoch if entry else 0,
            "try": (entry.tries if entry else 0) + 1,
            "args": req.get("args"),
            "entry": req.get("entry"),
            "parent": req.get("parent"),
            "by": holder_label(session),
            "ts": time.time(),
        }
        self.apply(validate(rec))
        entry = self.runs[run_id]
        entry.holder, entry.invocation, entry.fenced = session, invocation, None
        return entry.wire(), [rec]

    def check(self, rec: Record, session: str | None) -> bool:
        """True if the record is new and allowed, False if it is a resend; raise on a conflict."""
        validate(rec)
        k, run_id = rec["k"], rec["run"]
        if k in JOURNAL_KINDS:
            return True
        entry = self.runs.get(run_id)
        if entry is None:
            if k == "run":
                return True
            raise JournalError(f"unknown run {run_id!r}", run_id=run_id)
        if natural_key(rec) in entry.keys and k not in ("resolve", "answer"):
            return False  # a resend of a record already applied
        # a resolution or an answer is a person's decision: a second one says who decided first
        expected = entry.epoch + 1 if k == "reset" else entry.epoch
        if rec["epoch"] != expected:
            raise JournalError(
                f"run {run_id} was reset (epoch {entry.epoch}) while this process executed epoch "
                f"{rec['epoch']}",
                fix="call the workflow again to start the reset run",
                run_id=run_id,
            )
        if entry.status == "cancelled" and k not in ("reset", "restart", "budget"):
            raise cancelled_error(entry.run_id, entry.error)
        if k == "cancel" and entry.status == "completed":
            raise JournalError(
                f"run {run_id} already completed: there is nothing to cancel",
                fix=f"`lil runs reset {run_id}` starts it over instead",
                run_id=run_id,
            )
        if k in ("budget", "restart", "cancel"):
            return True  # anyone may raise a budget or cancel, even while the run executes
        if k == "board":  # anyone may write the board: its versions arbitrate
            return check_board(entry, rec)
        if k == "answer":
            from letitloop.journal._approvals import check_answer

            return check_answer(entry, rec)  # a person decides while the run waits holding it
        if k == "reset" and entry.workflow.startswith("langgraph:"):
            raise JournalError(
                f"run {run_id} is a LangGraph thread: its checkpoints are LangGraph's to manage",
                fix="delete the thread with the checkpointer's delete_thread(), or fork it with "
                "update_state",
                run_id=run_id,
            )
        if k in ("resolve", "reset"):
            if entry.holder is not None and entry.holder != session:
                raise RunLockedError(
                    f"run {run_id} is being executed by {holder_label(entry.holder)}",
                    fix="wait until that process stops, then try again",
                    run_id=run_id,
                )
            if k == "resolve":
                self._check_resolve(entry, rec)
            return True
        if entry.holder != session and entry.fenced == session and session:  # a lapsed worker
            from letitloop.journal._queues import fenced_error

            raise fenced_error(run_id, entry.holder and holder_label(entry.holder))
        if entry.holder != session:  # every kind: a run's header (entry, arguments) too
            raise RunLockedError(
                f"this process does not hold run {run_id} (held by "
                f"{holder_label(entry.holder) if entry.holder else 'nobody'})",
                fix="open the run again before writing to it",
                run_id=run_id,
            )
        if k in ("ok", "err", "step"):
            current = entry.steps.get(rec["pos"])
            if current and current["status"] == "completed" and current["att"] != rec["att"]:
                raise JournalError(
                    f"step {rec['name']!r} at position {rec['pos']} of run {run_id} already "
                    f"completed in attempt {current['att']}",
                    run_id=run_id,
                    step=rec["name"],
                    position=rec["pos"],
                )
        return True

    def _check_resolve(self, entry: RunEntry, rec: Record) -> None:
        step = entry.steps.get(rec["pos"])
        if rec["res"] == "rearm":
            err = (step or {}).get("err") or {}
            if step is None or step["att"] != rec["att"] or not err.get("dead") or step.get("res"):
                raise JournalError(
                    f"position {rec['pos']} of run {entry.run_id} is not a dead-lettered step",
                    fix=f"see the run with `lil runs show {entry.run_id}`",
                    run_id=entry.run_id,
                    position=rec["pos"],
                )
            return
        if step is None or step["kind"] != "marker" or step["att"] != rec["att"]:
            raise JournalError(
                f"no marker attempt {rec['att']} at position {rec['pos']} in run {entry.run_id}",
                fix="list the run's effects with `lil effects list` and use the shown position",
                run_id=entry.run_id,
                position=rec["pos"],
            )
        if step.get("res"):
            raise JournalError(
                f"marker {step['name']!r} of run {entry.run_id} was already resolved as "
                f"{step['res']!r} by {step.get('res_by')}",
                fix="nothing to resolve: the decision stands; `lil runs show "
                f"{entry.run_id}` shows it (a resolution is final)",
                run_id=entry.run_id,
                step=step["name"],
                position=rec["pos"],
            )
        if step["status"] == "completed":
            raise JournalError(
                f"marker {step['name']!r} of run {entry.run_id} completed; it is not in doubt",
                fix="nothing to resolve: only a marker in doubt needs a decision (`lil effects "
                "list` shows them)",
                run_id=entry.run_id,
                step=step["name"],
                position=rec["pos"],
            )

    def apply(self, rec: Record) -> None:
        """Fold one accepted record into the loaded run."""
        k, run_id = rec["k"], rec["run"]
        if k in JOURNAL_KINDS:
            return  # kept by the store (and MemoryJournal), not by the runs' live state
        entry = self.runs.get(run_id)
        if entry is None:
            entry = self.runs[run_id] = RunEntry(run_id, rec["wf"], rec["key"], rec["ts"])
        entry.updated = rec["ts"]
        if k in ACTIVE_KINDS:  # written by the run's own process: its current try got this far
            entry.last_active = max(entry.last_active or 0.0, rec["ts"])
        if k == "reset":
            entry.busy, entry.try_started, entry.last_active = 0.0, None, None
            entry.epoch, entry.steps, entry.keys, entry.board = rec["epoch"], {}, set(), {}
            entry.status, entry.tries, entry.result, entry.error = "reset", 0, None, None
            entry.current, entry.cost_micros, entry.tokens, entry.saved_micros = None, 0, 0, 0
            return
        entry.keys.add(natural_key(rec))
        if k == "run":
            entry.busy = entry.active_seconds()  # the try before this one ended
            entry.try_started = entry.last_active = rec["ts"]
            entry.tries = max(entry.tries, rec["try"])
            entry.status, entry.error = "running", None
            entry.args, entry.entry, entry.parent = rec["args"], rec["entry"], rec["parent"]
            entry.started_by = rec["by"]
        elif k == "done":
            entry.status, entry.result, entry.error = "completed", (rec["codec"], rec["out"]), None
            entry.result_shown = rec.get("shown")
            entry.current = None
        elif k == "fail":
            entry.status, entry.error = "failed", rec["err"]
        elif k == "budget":
            entry.budget = (rec["usd_micros"], rec["tokens"])
        elif k == "answer":
            entry.steps[rec["pos"]]["ans"] = rec
        elif k in ("restart", "wait"):
            pass  # kept as an event for the dashboards
        elif k == "board":
            entry.board[rec["key"]] = max(entry.board.get(rec["key"], 0), rec["ver"])
        elif k == "cancel":
            entry.status, entry.current = "cancelled", None
            entry.error = {"type": "letitloop.Cancelled", "message": cancel_message(rec)}
        elif k == "rewind":  # the code changed here: this step and later ones run again
            for step in entry.steps.values():
                if step["pos"] >= rec["pos"] and step["status"] != "superseded":
                    step["status"] = "superseded"
                    step["wire"] = [step.get(f) for f in _WIRE_FIELDS]
            entry.current = None
        elif k == "suspend":
            entry.status = "suspended"
            entry.error = {"type": "letitloop.Suspended", "message": rec["reason"]}
        elif k == "resolve":
            step = entry.steps[rec["pos"]]
            step["res"], step["res_by"] = rec["res"], rec["by"]
            step["wire"] = [step.get(f) for f in _WIRE_FIELDS]
        else:
            self._apply_step(entry, rec)
            if cost := rec.get("cost"):
                entry.cost_micros += cost["usd_micros"]
                entry.tokens += cost["in"] + cost["out"]
            if cache := rec.get("cache"):
                entry.saved_micros += cache["saved"]

    def _apply_step(self, entry: RunEntry, rec: Record) -> None:
        old = entry.steps.get(rec["pos"])
        if old is not None and old["att"] > rec["att"]:
            return  # a late record of a superseded attempt changes nothing current
        status = {"step": "started", "ok": "completed", "err": "failed"}[rec["k"]]
        late_start = status == "started" and old is not None and old["att"] == rec["att"]
        if late_start and old is not None and old["status"] != "started":
            return  # the start record arrived after the outcome (different connections)
        step: dict[str, Any] = {
            "pos": rec["pos"],
            "att": rec["att"],
            "kind": rec["kind"],
            "name": rec["name"],
            "fp": rec["fp"],
            "status": status,
        }
        if rec["k"] == "step" and old is not None and rec["kind"] == "step":
            step["err"] = old.get("err")  # the policy's counts, wait and critique carry forward
        if rec["kind"] == "approval":  # the request and its decision stay with the position
            step["ask"] = rec.get("ask") or (old or {}).get("ask")
            if (rec.get("ask") or {}).get("schema"):  # its answer will be checked: import now
                from letitloop.journal._approvals import warm

                warm()
            # only the same attempt's answer: a superseded attempt's (the cell was edited and
            # asks again) must not decide the new request
            if old is not None and old.get("ans") is not None and old["att"] == rec["att"]:
                step["ans"] = old["ans"]
        # a marker resolved as done, completed by the run that goes on past it: who resolved
        # it stays with it
        same = old is not None and old["att"] == rec["att"]
        if rec["kind"] == "marker" and same and old is not None and old.get("res"):
            step["res"], step["res_by"] = old["res"], old.get("res_by")
        if rec["k"] != "step":
            out = rec.get("out")
            big = out is not None and len(out) > self.inline_limit
            step.update(codec=rec.get("codec"), out=None if big else out, big=big)
            step.update(err=rec.get("err"), next=rec.get("next"))
        step["wire"] = [step.get(f) for f in _WIRE_FIELDS]
        entry.steps[rec["pos"]] = step
        entry.current = rec["name"] if status == "started" else None


def cancel_message(rec: Record) -> str:
    return f"cancelled by {rec['by']}" + (f": {rec['reason']}" if rec.get("reason") else "")


def cancelled_error(run_id: str, error: dict[str, Any] | None) -> RunCancelledError:
    """What every surface says of a cancelled run (``error``: the run's, naming who cancelled
    it and why)."""
    why = (error or {}).get("message") or "cancelled"
    return RunCancelledError(
        f"run {run_id} was {why}; it does not run again",
        fix=f"`lil runs reset {run_id}` starts it over (a new epoch)",
        run_id=run_id,
    )


def cancel_record(entry: RunEntry, by: str, reason: str | None) -> Record:
    rec = {"k": "cancel", "run": entry.run_id, "epoch": entry.epoch, "by": by, "reason": reason}
    return validate(rec | {"ts": time.time()})


def in_doubt_error(run_id: str, step: StepRecord) -> InDoubtError:
    """The error for a marker whose block started but never recorded completion."""
    why = (
        f"raised {step.error.get('type')}: {step.error.get('message')}"
        if step.error
        else "the process stopped inside it"
    )
    return InDoubtError(
        f"side effect {step.name!r} (position {step.position}) of run {run_id} is in doubt: its "
        f"block started but never recorded completion ({why}); it may or may not have happened",
        fix=(
            f"check whether it happened, then run `lil effects resolve {run_id} {step.name} "
            "--done` (skip it) or `--redo` (run the block again); or pass "
            "reconcile=callback to atomic_marker to decide in code"
        ),
        run_id=run_id,
        step=step.name,
        position=step.position,
    )


def error_dict(exc: BaseException) -> dict[str, Any]:
    """An exception as journaled data: type, message, traceback text, and our fields if any."""
    import traceback

    data: dict[str, Any] = {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc))[-8000:],
    }
    if isinstance(exc, LetItLoopError):
        data["fix"] = exc.fix
    return data


def resolve_record(
    entry: RunEntry, marker: str | int, resolution: str, by: str, note: str | None = None
) -> Record:
    """The ``resolve`` record for a marker named or positioned ``marker`` in a loaded run
    (``note``: the person's optional comment, kept with the decision)."""
    found = [
        s
        for s in entry.steps.values()
        if s["kind"] == "marker" and (s["pos"] == marker or s["name"] == marker)
    ]
    if not found:
        raise JournalError(
            f"run {entry.run_id} has no marker {marker!r} in its current epoch",
            fix=f"see its markers with `lil effects list {entry.run_id}`",
            run_id=entry.run_id,
        )
    doubtful = [s for s in found if s["status"] != "completed" and not s.get("res")]
    return _resolve(entry, (doubtful or found)[-1], resolution, by, note)


def _resolve(
    entry: RunEntry, step: dict[str, Any], res: str, by: str, note: str | None = None
) -> Record:
    """The ``resolve`` record of one attempt of a loaded run's step (a marker, a dead letter)."""
    rec = {"k": "resolve", "run": entry.run_id, "epoch": entry.epoch, "pos": step["pos"]}
    rec |= {"att": step["att"], "res": res, "by": by, "ts": time.time()}
    return validate(rec | ({"note": note} if note else {}))


def rearm_record(entry: RunEntry, step: str | int | None, by: str) -> Record:
    """The record that gives a dead-lettered step (by name or position, or the only one) a new
    attempt budget."""
    dead = [
        s
        for s in entry.steps.values()
        if (s.get("err") or {}).get("dead")
        and not s.get("res")
        and s["status"] == "failed"
        and step in (None, s["pos"], s["name"])
    ]
    if not dead:
        raise JournalError(
            f"run {entry.run_id} has no dead-lettered step"
            + (f" {step!r}" if step is not None else ""),
            fix=f"see its steps with `lil runs show {entry.run_id}`",
            run_id=entry.run_id,
        )
    return _resolve(entry, dead[-1], "rearm", by)


def reset_record(entry: RunEntry, by: str, note: str | None = None) -> Record:
    rec = {"k": "reset", "run": entry.run_id, "epoch": entry.epoch + 1, "by": by}
    return validate(rec | {"ts": time.time()} | ({"note": note} if note else {}))
