"""A person in the loop: ``approval()`` asks and waits for a decision, ``suspend()`` pauses a run.

Both are positions of the run, like steps. ``approval`` journals its request durably, then waits
for the decision the journal pushes when someone approves or rejects (``lil approvals``, the TUI,
the notebook widget or the editor, all through ``Journal.decide_approval``), with no polling.
Without a decision by the deadline it applies ``on_timeout``, as of the deadline, even when no
process was running then. With ``wait=False`` or ``on_timeout="suspend"`` the run is suspended
and the process may exit; calling the workflow again (or ``lil runs resume``) picks up the
decision and goes on. ``async_approval`` is the same for ``@durable_async`` workflows, waiting
on a worker thread so the event loop stays free. ``suspend(reason)`` stops the run once at
that point; the next call continues past it.
"""

from __future__ import annotations

import threading
import time
from contextvars import ContextVar
from typing import Any, NamedTuple

from letitloop.errors import ApprovalDecidedError, ApprovalPending, ConfigError, Suspended
from letitloop.journal import (
    ApprovalInfo,
    EventInfo,
    approval_id,
    approval_request,
    check_on_timeout,
    check_payload,
    match_approval,
    parse_timeout,
    payload_json,
)
from letitloop.kernel._context import RunContext, require_run
from letitloop.kernel._fingerprint import fingerprint

_NULL = ("json", b"null")
# False where nothing may block (a notebook cell: the approval widget needs the kernel free)
may_wait: ContextVar[bool] = ContextVar("letitloop_may_wait", default=True)


class Decision(NamedTuple):
    """What ``approval()`` returns: the decision, and the payload as approved (maybe edited)."""

    approved: bool
    payload: Any
    comment: str | None
    by: str
    at: float
    timed_out: bool = False
    approval_id: str = ""

    @property
    def rejected(self) -> bool:
        return not self.approved


def approval(
    name: str,
    payload: Any = None,
    *,
    schema: dict[str, Any] | None = None,
    timeout: float | str | None = None,
    on_timeout: str = "reject",
    wait: bool = True,
) -> Decision:
    """Ask a person to approve ``payload``; return their ``Decision`` (see the module docstring).

    ``schema`` (a JSON schema) lets the approver edit the payload; ``timeout`` is seconds or a
    duration (``"2h"``); ``on_timeout`` is ``"reject"``, ``"approve"`` or ``"suspend"``.
    """
    ctx = require_run("approval()")
    asked = _ask(ctx, name, payload, schema, timeout, on_timeout)
    if isinstance(asked, Decision):
        return asked
    if asked.request is not None:
        ctx.journal.append([asked.request])
    row = _await_decision(ctx, asked.id, asked.pos, name, wait and may_wait.get())
    return _decided(ctx, asked, row)


async def async_approval(
    name: str,
    payload: Any = None,
    *,
    schema: dict[str, Any] | None = None,
    timeout: float | str | None = None,
    on_timeout: str = "reject",
    wait: bool = True,
) -> Decision:
    """``approval`` for ``@durable_async`` workflows: the wait blocks a worker thread, never the
    event loop, so the workflow's other tasks go on while a person decides."""
    import asyncio

    ctx = require_run("async_approval()")
    asked = _ask(ctx, name, payload, schema, timeout, on_timeout)  # the position, in call order
    if isinstance(asked, Decision):
        return asked
    if asked.request is not None:
        await asyncio.to_thread(ctx.journal.append, [asked.request])
    waits = wait and may_wait.get()
    row = await asyncio.to_thread(_await_decision, ctx, asked.id, asked.pos, name, waits)
    return await asyncio.to_thread(_decided, ctx, asked, row)


class _Asked(NamedTuple):
    """An approval at its position, not decided yet: its id and the request to journal (None
    when an earlier call journaled it)."""

    pos: int
    att: int
    fp: str
    name: str
    id: str
    request: dict[str, Any] | None


def _ask(
    ctx: RunContext,
    name: str,
    payload: Any,
    schema: dict[str, Any] | None,
    timeout: float | str | None,
    on_timeout: str,
) -> Decision | _Asked:
    """Take the approval's position: its journaled decision on replay, else what to wait for."""
    if not isinstance(name, str) or not name:
        raise ConfigError(
            f"approval name must be a non-empty string, got {name!r}",
            fix='give it a literal name: approval("publish", payload)',
        )
    seconds = parse_timeout(timeout)
    check_on_timeout(on_timeout)
    pos = ctx.take_position()
    fp = fingerprint((payload_json(payload, "an approval's payload"),), {})
    rec = ctx.replayed(pos, "approval", name, fp)
    if rec is not None and rec.status == "completed":
        if ctx.observer is not None:  # a decided approval counts as done, like a step
            ctx.observer(ctx, pos, name, "replayed")
        return Decision(**ctx.output(rec))
    att = rec.attempt if rec is not None else ctx.first_attempt(pos)
    aid = approval_id(ctx.run_id, ctx.epoch, pos, att)
    request = None
    if rec is None:
        # checked before the clock starts: importing jsonschema can take seconds on a busy
        # machine, which must not eat into (or past) a short timeout
        check_payload(schema, payload, "the approval's payload")
        deadline = time.time() + seconds if seconds is not None else None
        ask = approval_request(aid, payload, schema, deadline, on_timeout)
        request = ctx.record("step", pos, att, "approval", name, fp, ask=ask)
    return _Asked(pos, att, fp, name, aid, request)


def _decided(ctx: RunContext, asked: _Asked, row: ApprovalInfo) -> Decision:
    """Journal the decision as the approval's output and return it."""
    decision = Decision(
        approved=row.status == "approved",
        payload=row.edited if row.edited is not None else row.payload,
        comment=row.comment,
        by=row.decided_by or "",
        at=row.decided_at or 0.0,
        timed_out=row.timed_out,
        approval_id=asked.id,
    )
    what = f"decision of approval {asked.name!r}"
    codec, data = ctx.codec.encode(decision._asdict(), what=what)
    ident = (asked.pos, asked.att, "approval", asked.name, asked.fp)
    ctx.journal.append([ctx.record("ok", *ident, codec=codec, out=data, next=None)])
    if ctx.observer is not None:
        ctx.observer(ctx, asked.pos, asked.name, "completed")
    return decision


def _await_decision(ctx: RunContext, aid: str, pos: int, name: str, wait: bool) -> ApprovalInfo:
    """Wait for the answer (woken by the journal's push), applying the timeout at the deadline."""
    woken = threading.Event()

    def on_events(events: list[EventInfo]) -> None:
        if not events or any(e.kind == "answer" and e.position == pos for e in events):
            woken.set()

    sub = ctx.journal.subscribe(on_events, run_id=ctx.run_id) if wait else None
    told = False
    try:
        while True:
            woken.clear()  # cleared before reading: an answer landing after the read wakes us
            row = match_approval(aid, ctx.journal.approvals(run_id=ctx.run_id, limit=1 << 30))
            if row.status in ("approved", "rejected"):
                return row
            expired = row.deadline is not None and time.time() >= row.deadline
            if expired and row.on_timeout != "suspend":
                try:
                    ctx.journal.decide_approval(
                        aid,
                        approved=row.on_timeout == "approve",
                        by="timeout",
                        comment=f"no decision by the deadline; on_timeout={row.on_timeout!r}",
                        timed_out_at=row.deadline,
                    )
                except ApprovalDecidedError:
                    pass  # a person decided in the meantime: their decision stands
                continue
            if expired or not wait:
                _pending(ctx, row, "timed out without a decision" if expired else "is pending")
            if not told:  # a blocked script must not look hung: say what it waits for, once
                told = _tell_waiting(ctx, row)
            left = None if row.deadline is None else max(0.0, row.deadline - time.time())
            woken.wait(left)
    finally:
        if sub is not None:
            sub.close()


def _tell_waiting(ctx: RunContext, row: ApprovalInfo) -> bool:
    """One line on stderr while ``approval()`` blocks: the approval id and how to decide it."""
    import sys

    until = ""
    if row.deadline is not None:
        import time

        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.deadline))
        until = f" until {when} (then on_timeout={row.on_timeout!r})"
    sys.stderr.write(
        f"letitloop: run {ctx.run_id} is waiting{until} for approval {row.name!r} "
        f"(id {row.id}); decide it with `lil approvals approve {row.id}` or "
        f"`lil approvals reject {row.id}` (or in lil-tui or the notebook)\n"
    )
    sys.stderr.flush()
    return True


def _pending(ctx: RunContext, row: ApprovalInfo, why: str) -> None:
    reason = f"approval {row.name!r} ({row.id}) {why}"
    ctx.suspend(reason)
    raise ApprovalPending(
        f"run {ctx.run_id} suspended: {reason}",
        fix=f"decide it with `lil approvals approve {row.id}` (or reject), then call the workflow "
        f"again or run `lil runs resume {ctx.run_id}`",
        run_id=ctx.run_id,
        step=row.name,
        position=row.position,
        approval_id=row.id,
    )


def suspend(reason: str) -> None:
    """Stop the run here (it becomes ``suspended`` with ``reason``); the next call continues."""
    ctx = require_run("suspend()")
    if not isinstance(reason, str) or not reason:
        raise ConfigError("suspend() needs a reason: a non-empty string saying what it waits for")
    pos = ctx.take_position()
    rec = ctx.replayed(pos, "suspend", "suspend", "")
    if rec is not None and rec.status == "completed":
        return
    if rec is not None:  # this call is the resume: the run goes on from here
        ident = (pos, rec.attempt, "suspend", "suspend", "")
        ctx.journal.append([ctx.record("ok", *ident, codec=_NULL[0], out=_NULL[1], next=None)])
        return
    ctx.journal.append([ctx.record("step", pos, ctx.first_attempt(pos), "suspend", "suspend", "")])
    ctx.suspend(reason)
    raise Suspended(
        f"run {ctx.run_id} suspended: {reason}",
        fix=f"call the workflow again, or run `lil runs resume {ctx.run_id}`, to continue",
        run_id=ctx.run_id,
        position=pos,
    )
