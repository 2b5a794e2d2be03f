"""The server extension's one translation module: journal data in, JSON-ready dicts out, and
checked request bodies in, the same library calls the CLI and lil-tui make out.

Nothing here knows about Tornado: ``_handlers`` calls one function per route, in a worker thread
(a journal call may wait for an owner to start), and turns a ``LetItLoopError`` into a 4xx JSON
answer to that one request. Output previews come from the codec's ``preview``, which never runs
user code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from letitloop import operate
from letitloop.errors import ConfigError, LetItLoopError

if TYPE_CHECKING:
    from letitloop.journal import Journal

MAX_BODY = 256 * 1024  # bytes of a request body: an edited approval payload fits easily
MAX_LIMIT = 5000  # runs a listing may ask for
MAX_PREVIEW = 4000  # characters of an output preview
MAX_TEXT = 4000  # characters of a comment
HUGE = 1_000_000
RUN_ACTIONS = ("resume", "retry", "budget", "cancel", "reset")
CELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}$")


class BadRequest(ConfigError):
    """A request the server extension cannot act on (bad JSON, unknown field, wrong type)."""

    title = "bad request"
    status = 400


class NotNow(BadRequest):
    """An action the run's state does not allow now (``operate.actions_for``): a conflict."""

    title = "action does not apply"
    status = 409


class TooLarge(BadRequest):
    """A request body over ``MAX_BODY``: refused before it is parsed."""

    title = "request too large"
    status = 413


@dataclass
class Context:
    """What every call needs: the journal (opened on first use, so a server whose user never
    opens letitloop starts no owner), the server's root directory (notebook paths the page
    sends are relative to it; resumes run there) and the server's OS user (``user@host``; a
    decision names the Jupyter user who took it as well: ``_identity.decider``)."""

    spec: Path | str  # a DuckDB file, or a postgresql:// URL
    root_dir: Path
    by: str
    resumes: dict[str, Any] = field(default_factory=dict)

    @operate.journal_once
    def journal(self) -> Journal:
        from letitloop.journal import open_journal

        return open_journal(self.spec)


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


def list_runs(
    ctx: Context, status: str | None, query: str, limit_arg: str | None
) -> dict[str, Any]:
    """Runs newest first, filtered by status and a search text (in id or workflow), each with
    how many approvals it waits for and the actions that apply to it."""
    limit = int_arg(limit_arg, 200, 1, MAX_LIMIT, "limit")
    if status and status not in operate.STATUSES:
        raise BadRequest(f"unknown status {status!r}", fix=f"one of {', '.join(operate.STATUSES)}")
    if len(query) > 200:
        raise BadRequest("search text over 200 characters", fix="shorten it")
    found = operate.list_summaries(ctx.journal, status=status or None, text=query, limit=limit)
    waiting = len(ctx.journal.approvals(status="pending", limit=HUGE))
    return {"runs": [operate.run_json(r) for r in found], "waiting": waiting}


def run_detail(ctx: Context, text: str) -> dict[str, Any]:
    """One run in full: its summary, steps (each with every attempt), result preview, the
    approvals it waits for, its effects in doubt and its map items."""
    return operate.view_json(operate.run_view(ctx.journal, text))


def run_action(ctx: Context, text: str, by: str, body: dict[str, Any]) -> dict[str, Any]:
    """resume | retry | budget | cancel | reset: the actions every surface takes, refused with
    the same cause everywhere when they do not apply; journaled as taken ``by`` the request's
    user."""
    action = body.get("action")
    if action not in RUN_ACTIONS:
        raise BadRequest(f"unknown action {action!r}", fix=f"one of {', '.join(RUN_ACTIONS)}")
    run_id = ctx.journal.find_run(text)
    summary = operate.summary_of(ctx.journal, ctx.journal.get_run(run_id))
    if action not in summary.actions:  # the rule the lab's buttons follow, and lil-tui's keys
        if action == "resume":  # its cause and fix as `lil runs resume` gives them
            try:
                operate.check_resumable(ctx.journal, run_id)
            except LetItLoopError as exc:
                raise NotNow(exc.message, fix=exc.fix) from None
        could = ", ".join(summary.actions) or "none: see it with `lil runs show`"
        raise NotNow(operate.why_not(action, summary), fix=f"what it offers now: {could}")
    if action == "resume":
        resume = operate.start_resume(ctx.journal, run_id, cwd=ctx.root_dir)
        ctx.resumes[run_id] = resume
        done = resume.outcome
    elif action == "retry":
        done = operate.retry_dead_letter(ctx.journal, run_id, by=by)
    elif action == "budget":
        dollars = body.get("dollars")
        if not isinstance(dollars, int | float) or isinstance(dollars, bool) or dollars <= 0:
            raise BadRequest("budget needs dollars, a number above 0", fix='{"dollars": 2.5}')
        done = operate.raise_budget(
            ctx.journal, run_id, by=by, usd=float(dollars), names=("dollars", "tokens")
        )
    elif action == "cancel":
        done = operate.cancel_run(ctx.journal, run_id, by=by, reason="cancelled from JupyterLab")
    else:
        done = operate.reset_run(ctx.journal, run_id, by=by)
    return done.to_json() if action == "resume" else _signed(done.to_json(), by)


def _signed(answer: dict[str, Any], by: str) -> dict[str, Any]:
    """The answer of a decision, its sentence saying who the journal names as having taken it
    (what the lab's notification shows)."""
    return answer | {"message": f"{answer.get('message', '')} (by {by})", "by": by}


# -- approvals ----------------------------------------------------------------------------------


def list_approvals(ctx: Context, status: str | None) -> dict[str, Any]:
    if status not in (None, "", "pending", "approved", "rejected", "cancelled"):
        raise BadRequest(f"unknown approval status {status!r}", fix="pending|approved|rejected")
    rows = ctx.journal.approvals(status=status or None, limit=HUGE)
    return {"approvals": [operate.approval_json(a) for a in sorted(rows, key=lambda a: a.created)]}


def decide_approval(
    ctx: Context, approval_id: str, by: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Approve or reject with a comment; an edited ``payload`` is checked against the request's
    JSON schema by the journal (the first decision wins: a later one is a 409)."""
    approved = body.get("approved")
    if not isinstance(approved, bool):
        raise BadRequest("field 'approved' (true or false) is required", fix='{"approved": true}')
    done = operate.decide_approval(
        ctx.journal,
        approval_id,
        approved=approved,
        by=by,
        comment=body.get("comment"),
        payload=body.get("payload"),
    )
    info = ctx.journal.approvals(run_id=done.run_id, limit=HUGE)
    row = next((a for a in info if a.id == done.data["approval_id"]), None)
    return _signed(done.to_json(), by) | {"approval": operate.approval_json(row) if row else None}


# -- effects in doubt ---------------------------------------------------------------------------


def list_effects(ctx: Context) -> dict[str, Any]:
    """Side effects in doubt in every run (the one rule every surface applies)."""
    return {"effects": [operate.doubt_json(d) for d in operate.doubts(ctx.journal)]}


def resolve_effect(
    ctx: Context, text: str, position: int, by: str, body: dict[str, Any]
) -> dict[str, Any]:
    resolution = body.get("resolution")
    if resolution not in ("done", "redo"):
        raise BadRequest("resolution must be 'done' or 'redo'", fix='{"resolution": "done"}')
    run_id = ctx.journal.find_run(text)
    done = operate.resolve_effect(
        ctx.journal, run_id, position, resolution, by=by, comment=body.get("comment")
    )
    return _signed(done.to_json(), by)


# -- splice proposals ---------------------------------------------------------------------------


def list_proposals(ctx: Context, state: str | None) -> dict[str, Any]:
    if state not in (None, "", "pending", "applied", "rejected", "conflict"):
        raise BadRequest(f"unknown proposal state {state!r}", fix="pending|applied|rejected")
    rows = ctx.journal.proposals(state or None)
    return {"proposals": [operate.proposal_json(p) for p in rows]}


def decide_proposal(
    ctx: Context, proposal_id: str, verb: str, by: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Apply (if the target is unchanged; a conflict is journaled and is a 409) or reject."""
    if verb == "apply":
        done = operate.apply_splice(ctx.journal, proposal_id, by=by)
    else:
        done = operate.reject_splice(ctx.journal, proposal_id, by=by, comment=body.get("comment"))
    return _signed(done.to_json(), by)


# -- queues and workers -------------------------------------------------------------------------


def list_queues(ctx: Context) -> dict[str, Any]:
    """Queues (depth, held runs, the oldest wait, paused), workers (host, pid, runs in hand,
    heartbeat age) and orphaned runs with the command that resumes them (operate's fleet)."""
    return operate.fleet_json(ctx.journal)


# -- %%durable cells ----------------------------------------------------------------------------


def cell_runs(ctx: Context, notebook: str, cells: list[tuple[str, str | None]]) -> dict[str, Any]:
    """The run of each ``%%durable NAME [--run-id KEY]`` cell of the notebook at ``notebook``
    (relative to the server root; a renamed notebook finds the runs it adopts, as the magic
    does), with a badge status: replayed | running | waiting | failed |
    completed | suspended | cancelled, or null when the cell never ran."""
    from letitloop.errors import JournalError

    root = ctx.root_dir.resolve()
    path = (root / notebook).resolve()
    if root not in path.parents:
        raise BadRequest("notebook path must be inside the server's root", fix="a relative path")
    found = {}
    for name, key in cells[:200]:
        if not CELL_NAME.match(name) or (key is not None and len(key) > 200):
            raise BadRequest(f"not a %%durable cell name: {name[:40]!r}", fix="NAME like ingest")
        run_id = f"cell.{name}:{key or operate.claim(ctx.journal, f'cell.{name}', str(path)).key}"
        try:
            info = ctx.journal.get_run(run_id).run
        except JournalError:
            found[name] = {"run_id": run_id, "status": None}
            continue
        pending = ctx.journal.approvals(status="pending", run_id=run_id, limit=1)
        events = ctx.journal.events(run_id=run_id, limit=HUGE)
        found[name] = {"run_id": run_id, "status": operate.badge(info, events, bool(pending))}
    return {"cells": found}
