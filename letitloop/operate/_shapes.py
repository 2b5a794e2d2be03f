"""The one JSON shape of each journal record that is not a run: approvals, splice proposals,
notifications, events and ``step.map`` items (runs and attempts are in ``_runs``).

The CLI's ``--json``, the lab's REST API and ``lil mcp`` write these and nothing else, so a
client that reads one surface reads them all. Every time is an epoch float; every text is data.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from letitloop.journal import ApprovalInfo, EventInfo, MapItems, Notice, Proposal

# the words a notification's delivery is said in, on every surface (never a run's statuses)
NOTICE_STATES = ("pending", "delivered", "failed")
PROPOSAL_STATES = ("pending", "applied", "rejected", "conflict")
APPROVAL_STATES = ("pending", "approved", "rejected", "cancelled")


def approval_json(a: ApprovalInfo) -> dict[str, Any]:
    """A request for a person's decision, and the decision once taken."""
    return {
        "id": a.id,
        "run_id": a.run_id,
        "position": a.position,
        "attempt": a.attempt,
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
        "timed_out": a.timed_out,
    }


def proposal_diff(p: Proposal) -> str:
    """The unified diff a person reviews before applying a proposal."""
    return "".join(
        difflib.unified_diff(
            p.old.splitlines(keepends=True),
            p.code.splitlines(keepends=True),
            fromfile=f"{p.path} ({p.target}, now)",
            tofile=f"{p.path} ({p.target}, proposed)",
        )
    )


def proposal_json(p: Proposal) -> dict[str, Any]:
    """A splice proposal with its diff."""
    return {
        "id": p.id,
        "path": p.path,
        "target": p.target,
        "old": p.old,
        "code": p.code,
        "diff": proposal_diff(p),
        "reason": p.reason,
        "by": p.by,
        "created": p.created,
        "base": p.base,
        "origin": p.origin,
        "state": p.state,
        "decided_by": p.decided_by,
        "decided_at": p.decided_at,
        "note": p.note,
    }


def notice_json(n: Notice) -> dict[str, Any]:
    """A notification and its delivery so far (``state``: pending | delivered | failed)."""
    return {
        "key": n.key,
        "seq": n.seq,
        "event": n.event,
        "run_id": n.run_id,
        "created": n.created,
        "state": n.state,
        "tries": n.tries,
        "next_at": n.next_at,
        "last_error": n.last_error,
        "delivered_at": n.delivered_at,
        "body": n.body,
    }


def event_json(e: EventInfo) -> dict[str, Any]:
    """A journal event as a stream carries it: small, with no step output."""
    return {
        "seq": e.seq,
        "run_id": e.run_id,
        "kind": e.kind,
        "position": e.position,
        "attempt": e.attempt,
        "name": e.name,
        "ts": e.ts,
    }


def map_json(m: MapItems) -> dict[str, Any]:
    """The items of one ``step.map`` step: counts by status and each item's child run."""
    return {
        "position": m.position,
        "name": m.name,
        "workflow": m.workflow,
        "counts": m.counts(),
        "summary": m.summary(),
        "items": [
            {"index": i, "run_id": run.run_id, "status": run.status, "cost_micros": run.cost_micros}
            for i, run in m.items
        ],
    }
