"""The server extension's one translation module: journal data in, JSON-ready dicts out, and
checked request bodies in, the same library calls the CLI and lil-tui make out.

Nothing here knows about Tornado: ``_handlers`` calls one function per route, in a worker thread
(a journal call may wait for an owner to start), and turns a ``LetItLoopError`` into a 4xx JSON
answer to that one request. Output previews come from the codec's ``preview``, which never runs
user code.
"""

from __future__ import annotations

import difflib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from letitloop.errors import ConfigError

if TYPE_CHECKING:
    from letitloop.journal._contract import (
        ApprovalInfo,
        AttemptInfo,
        EventInfo,
        Journal,
        Proposal,
        RunDetail,
        RunInfo,
    )
    from letitloop.journal.duckdb._client import OwnerJournal

MAX_BODY = 256 * 1024  # bytes of a request body: an edited approval payload fits easily
MAX_LIMIT = 5000  # runs a listing may ask for
MAX_PREVIEW = 4000  # characters of an output preview
MAX_TEXT = 4000  # characters of a comment
HUGE = 1_000_000
RUN_STATUSES = ("running", "suspended", "completed", "failed", "interrupted", "cancelled", "reset")
RUN_ACTIONS = ("resume", "retry", "budget", "cancel", "reset")
CELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}$")


class BadRequest(ConfigError):
    """A request the server extension cannot act on (bad JSON, unknown field, wrong type)."""

    title = "bad request"
    status = 400


class TooLarge(BadRequest):
    """A request body over ``MAX_BODY``: refused before it is parsed."""

    title = "request too large"
    status = 413


@dataclass
class Context:
    """What every call needs: the journal (opened on first use, so a server whose user never
    opens letitloop starts no owner), the server's root directory (notebook paths the page
    sends are relative to it; resumes run there) and who decides."""

    spec: Path
    root_dir: Path
    by: str
    resumes: dict[str, Any] = field(default_factory=dict)
    _journal: Journal | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def journal(self) -> Journal:
        with self._lock:
            if self._journal is None:
                from letitloop.journal import open_journal

                self._journal = open_journal(self.spec)
            return self._journal

    @property
    def owner(self) -> OwnerJournal:
        """The journal typed as the TUI's actions expect (they only call contract methods)."""
        return cast("OwnerJournal", self.journal)


# -- request bodies -----------------------------------------------------------------------------


def parse_body(raw: bytes, allowed: dict[str, tuple[type, ...]]) -> dict[str, Any]:
    """A JSON object with only ``allowed`` fields of the allowed types; anything else is a
    ``BadRequest`` naming the field, and nothing is done."""
    if len(raw) > MAX_BODY:
        raise TooLarge(
            f"request body of {len(raw)} bytes is over the {MAX_BODY}-byte limit",
            fix="send a smaller payload",
        )
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"request body is not JSON: {exc}", fix="send a JSON object") from None
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object", fix="send {...}")
    for key, value in body.items():
        if key not in allowed:
            raise BadRequest(
                f"unknown field {key!r}", fix=f"allowed fields: {', '.join(sorted(allowed))}"
            )
        types = allowed[key]
        wrong = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if types and wrong:
            names = "/".join("null" if t is type(None) else t.__name__ for t in types)
            raise BadRequest(f"field {key!r} must be {names}", fix=f"send {key} as {names}")
    text = body.get("comment")
    if isinstance(text, str) and len(text) > MAX_TEXT:
        raise BadRequest(f"comment over {MAX_TEXT} characters", fix="shorten the comment")
    return body


def int_arg(value: str | None, default: int, low: int, high: int, what: str) -> int:
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except ValueError:
        raise BadRequest(
            f"{what} must be an integer, not {value[:40]!r}", fix=f"{what}=100"
        ) from None
    if not low <= n <= high:
        raise BadRequest(f"{what} must be between {low} and {high}", fix=f"{what}={default}")
    return n


# -- runs ---------------------------------------------------------------------------------------


def run_json(r: RunInfo, waiting: int = 0) -> dict[str, Any]:
    return {
        "run_id": r.run_id,
        "workflow": r.workflow,
        "key": r.key,
        "status": r.status,
        "epoch": r.epoch,
        "attempt": r.attempt,
        "created": r.created,
        "updated": r.updated,
        "steps_done": r.steps_done,
        "current_step": r.current_step,
        "holder": r.holder,
        "parent": r.parent,
        "error": error_json(r.error),
        "cost_micros": r.cost_micros,
        "tokens": r.tokens,
        "saved_micros": r.saved_micros,
        "waiting": waiting,
    }


def error_json(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """A journaled error with only the fields a page shows (type, message, fix, traceback)."""
    if not error:
        return None
    keep = ("type", "title", "message", "fix", "traceback", "dead", "step", "position")
    return {k: error.get(k) for k in keep if error.get(k) is not None}


def list_runs(
    ctx: Context, status: str | None, query: str, limit_arg: str | None
) -> dict[str, Any]:
    """Runs newest first, filtered by status and a search text (in id or workflow), each with
    how many approvals it waits for."""
    limit = int_arg(limit_arg, 200, 1, MAX_LIMIT, "limit")
    if status and status not in RUN_STATUSES:
        raise BadRequest(f"unknown status {status!r}", fix=f"one of {', '.join(RUN_STATUSES)}")
    if len(query) > 200:
        raise BadRequest("search text over 200 characters", fix="shorten it")
    waiting: dict[str, int] = {}
    for a in ctx.journal.approvals(status="pending", limit=HUGE):
        waiting[a.run_id] = waiting.get(a.run_id, 0) + 1
    text = query.strip().lower()
    rows = []
    for r in ctx.journal.list_runs(status=status or None, limit=limit if not text else HUGE):
        if text and text not in r.run_id.lower() and text not in r.workflow.lower():
            continue
        rows.append(run_json(r, waiting.get(r.run_id, 0)))
        if len(rows) >= limit:
            break
    return {"runs": rows, "waiting": sum(waiting.values())}


def attempt_json(a: AttemptInfo) -> dict[str, Any]:
    preview = a.preview
    if preview is not None and len(preview) > MAX_PREVIEW:
        preview = preview[:MAX_PREVIEW] + f"… ({len(preview) - MAX_PREVIEW} more characters)"
    return {
        "position": a.position,
        "attempt": a.attempt,
        "kind": a.kind,
        "name": a.name,
        "status": a.status,
        "started": a.started,
        "ended": a.ended,
        "codec": a.codec,
        "size": a.size,
        "error": error_json(a.error),
        "resolution": a.resolution,
        "resolved_by": a.resolved_by,
        "preview": preview,
        "cost_micros": a.cost_micros,
        "tokens_in": a.tokens_in,
        "tokens_out": a.tokens_out,
        "model": a.model,
        "cache": a.cache,
    }


def run_detail(ctx: Context, text: str) -> dict[str, Any]:
    """One run: its header, its steps (each with every attempt), result preview, budget, the
    approvals it waits for and its effects in doubt."""
    from letitloop.cli._effects import in_doubt
    from letitloop.kernel._codec import preview

    run_id = ctx.journal.find_run(text)
    detail: RunDetail = ctx.journal.get_run(run_id)
    steps: dict[int, list[dict[str, Any]]] = {}
    for a in sorted(detail.attempts, key=lambda a: (a.position, a.attempt)):
        steps.setdefault(a.position, []).append(attempt_json(a))
    budget = None
    for e in ctx.journal.events(run_id=run_id, limit=HUGE):
        if e.kind == "budget":
            budget = e.data.get("usd_micros")
    pending = ctx.journal.approvals(status="pending", run_id=run_id, limit=HUGE)
    last = {pos: tries[-1] for pos, tries in steps.items()}
    dead = any(
        t["error"] and t["error"].get("dead") and t["resolution"] != "rearm" for t in last.values()
    )
    return {
        "run": run_json(detail.run, len(pending)),
        "steps": [
            {
                "position": pos,
                "name": tries[-1]["name"],
                "kind": tries[-1]["kind"],
                "status": tries[-1]["status"],
                "attempts": tries,
            }
            for pos, tries in sorted(steps.items())
        ],
        "result": preview(*detail.result)[:MAX_PREVIEW] if detail.result else None,
        "budget_micros": budget,
        "dead_letter": dead,
        "approvals": [approval_json(a) for a in pending],
        "effects": [{"position": a.position, "name": a.name} for a in in_doubt(detail)],
    }


def run_action(ctx: Context, text: str, body: dict[str, Any]) -> dict[str, Any]:
    """resume | retry | budget | cancel | reset, through the same calls lil-tui makes."""
    from letitloop.tui import _actions as act

    action = body.get("action")
    if action not in RUN_ACTIONS:
        raise BadRequest(f"unknown action {action!r}", fix=f"one of {', '.join(RUN_ACTIONS)}")
    run_id = ctx.journal.find_run(text)
    if action == "resume":
        resume = act.start_resume(ctx.journal.location, run_id, cwd=str(ctx.root_dir))
        ctx.resumes[run_id] = resume
        message = f"resuming {run_id} in a new process (pid {resume.process.pid})"
    elif action == "retry":
        message = act.retry_dead_letter(ctx.owner, run_id, ctx.by)
    elif action == "budget":
        dollars = body.get("dollars")
        if not isinstance(dollars, int | float) or isinstance(dollars, bool) or dollars <= 0:
            raise BadRequest("budget needs dollars, a number above 0", fix='{"dollars": 2.5}')
        message = act.raise_budget(ctx.owner, run_id, ctx.by, float(dollars))
    elif action == "cancel":
        ctx.journal.cancel_run(run_id, ctx.by, "cancelled from JupyterLab")
        message = f"cancelled {run_id}: it stops at its next step; reset it to start over"
    else:
        message = act.reset_run(ctx.owner, run_id, ctx.by)
    return {"message": message, "run_id": run_id}


# -- approvals ----------------------------------------------------------------------------------


def approval_json(a: ApprovalInfo) -> dict[str, Any]:
    return {
        "id": a.id,
        "run_id": a.run_id,
        "position": a.position,
        "name": a.name,
        "payload": a.payload,
        "schema": a.schema,
        "created": a.created,
        "deadline": a.deadline,
        "on_timeout": a.on_timeout,
        "status": a.status,
        "decided_by": a.decided_by,
        "decided_at": a.decided_at,
        "comment": a.comment,
        "edited": a.edited,
    }


def list_approvals(ctx: Context, status: str | None) -> dict[str, Any]:
    if status not in (None, "", "pending", "approved", "rejected", "cancelled"):
        raise BadRequest(f"unknown approval status {status!r}", fix="pending|approved|rejected")
    rows = ctx.journal.approvals(status=status or None, limit=HUGE)
    return {"approvals": [approval_json(a) for a in sorted(rows, key=lambda a: a.created)]}


def decide_approval(ctx: Context, approval_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Approve or reject with a comment; an edited ``payload`` is checked against the request's
    JSON schema by the journal (the first decision wins: a later one is a 409)."""
    from letitloop.tui import _actions as act

    approved = body.get("approved")
    if not isinstance(approved, bool):
        raise BadRequest("field 'approved' (true or false) is required", fix='{"approved": true}')
    message = act.decide_approval(
        ctx.owner, approval_id, approved, ctx.by, body.get("comment"), body.get("payload")
    )
    row = ctx.journal.approvals(limit=HUGE)
    info = next((a for a in row if a.id.startswith(approval_id)), None)
    return {"message": message, "approval": approval_json(info) if info else None}


# -- effects in doubt ---------------------------------------------------------------------------


def list_effects(ctx: Context) -> dict[str, Any]:
    """Markers in doubt in every run that is neither completed nor running."""
    from letitloop.cli._effects import in_doubt

    rows = []
    for r in ctx.journal.list_runs(limit=HUGE):
        if r.status in ("completed", "running", "reset"):
            continue
        for a in in_doubt(ctx.journal.get_run(r.run_id)):
            why = a.error.get("message") if a.error else "the process stopped inside the block"
            rows.append(
                {
                    "run_id": r.run_id,
                    "run_status": r.status,
                    "position": a.position,
                    "name": a.name,
                    "attempt": a.attempt,
                    "started": a.started,
                    "why": why,
                }
            )
    return {"effects": rows}


def resolve_effect(ctx: Context, text: str, position: int, body: dict[str, Any]) -> dict[str, Any]:
    from letitloop.tui import _actions as act

    resolution = body.get("resolution")
    if resolution not in ("done", "redo"):
        raise BadRequest("resolution must be 'done' or 'redo'", fix='{"resolution": "done"}')
    run_id = ctx.journal.find_run(text)
    return {"message": act.resolve_effect(ctx.owner, run_id, position, resolution, ctx.by)}


# -- splice proposals ---------------------------------------------------------------------------


def proposal_json(p: Proposal) -> dict[str, Any]:
    diff = difflib.unified_diff(
        p.old.splitlines(keepends=True),
        p.code.splitlines(keepends=True),
        fromfile=f"{p.path} ({p.target}, now)",
        tofile=f"{p.path} ({p.target}, proposed)",
    )
    return {
        "id": p.id,
        "path": p.path,
        "target": p.target,
        "old": p.old,
        "code": p.code,
        "diff": "".join(diff),
        "reason": p.reason,
        "by": p.by,
        "created": p.created,
        "origin": p.origin,
        "state": p.state,
        "decided_by": p.decided_by,
        "decided_at": p.decided_at,
        "note": p.note,
    }


def list_proposals(ctx: Context, state: str | None) -> dict[str, Any]:
    if state not in (None, "", "pending", "applied", "rejected", "conflict"):
        raise BadRequest(f"unknown proposal state {state!r}", fix="pending|applied|rejected")
    return {"proposals": [proposal_json(p) for p in ctx.journal.proposals(state or None)]}


def decide_proposal(
    ctx: Context, proposal_id: str, verb: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Apply (if the target is unchanged; a conflict is journaled and is a 409) or reject."""
    from letitloop.tui import _actions as act

    if verb == "apply":
        message = act.apply_splice(ctx.owner, proposal_id, ctx.by)
    else:
        message = act.reject_splice(ctx.owner, proposal_id, ctx.by, body.get("comment"))
    return {"message": message}


# -- %%durable cells ----------------------------------------------------------------------------


def cell_runs(ctx: Context, notebook: str, cells: list[tuple[str, str | None]]) -> dict[str, Any]:
    """The run of each ``%%durable NAME [--run-id KEY]`` cell of the notebook at ``notebook``
    (relative to the server root; a renamed notebook finds the runs it adopts, as the magic
    does), with a badge status: replayed | running | waiting | failed |
    completed | suspended | cancelled, or null when the cell never ran."""
    from letitloop.errors import JournalError
    from letitloop.notebook_ext._notebook import claim  # the key the magic itself takes

    root = ctx.root_dir.resolve()
    path = (root / notebook).resolve()
    if root not in path.parents:
        raise BadRequest("notebook path must be inside the server's root", fix="a relative path")
    found = {}
    for name, key in cells[:200]:
        if not CELL_NAME.match(name) or (key is not None and len(key) > 200):
            raise BadRequest(f"not a %%durable cell name: {name[:40]!r}", fix="NAME like ingest")
        run_id = f"cell.{name}:{key or claim(ctx.journal, f'cell.{name}', str(path)).key}"
        try:
            info = ctx.journal.get_run(run_id).run
        except JournalError:
            found[name] = {"run_id": run_id, "status": None}
            continue
        pending = ctx.journal.approvals(status="pending", run_id=run_id, limit=1)
        events = ctx.journal.events(run_id=run_id, limit=HUGE)
        found[name] = {"run_id": run_id, "status": badge(info, events, bool(pending))}
    return {"cells": found}


def badge(run: RunInfo, events: list[EventInfo], waiting: bool) -> str:
    """A cell's badge: ``replayed`` when its latest execution ran no step (every step came from
    the journal), ``waiting`` for a pending approval, else the run's status."""
    if run.status == "suspended" and waiting:
        return "waiting"
    if run.status != "completed":
        return run.status
    starts = [e.seq for e in events if e.kind == "run" and e.data.get("epoch") == run.epoch]
    if len(starts) < 2:
        return "completed"
    ran = any(e.kind == "step" and e.seq > starts[-1] for e in events)
    return "completed" if ran else "replayed"


# -- events -------------------------------------------------------------------------------------


def event_json(e: EventInfo) -> dict[str, Any]:
    """A journal event as the event bus carries it: small, with no step output."""
    return {
        "seq": e.seq,
        "run_id": e.run_id,
        "kind": e.kind,
        "position": e.position,
        "name": e.name,
        "ts": e.ts,
    }
