"""The read tools: the journal as every other surface shows it, through the operate layer, in
its one JSON shape per record, paged and capped for an agent's small context.

Each function takes the service and the checked arguments and returns JSON data; a
``LetItLoopError`` it raises is the answer (with its fix). Nothing here writes to the journal.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from letitloop import operate
from letitloop.mcp._options import WHERE_PEOPLE_DECIDE
from letitloop.mcp._service import Service, offset_of, page, shrink

HUGE = 1_000_000
RESULT_PREVIEW = 2000  # characters of a run's result preview in show_run
APPROVALS_DECIDED_BY = (
    "a person approves or rejects: the lab's inbox (JupyterLab), lil-tui, or "
    "`lil approvals approve ID` / `lil approvals reject ID`"
)
EFFECTS_DECIDED_BY = (
    "a person resolves it: the lab, lil-tui, or `lil effects resolve RUN MARKER --done` (it "
    "happened: skip the block) / `--redo` (run it again)"
)
PROPOSALS_DECIDED_BY = (
    "a person applies or rejects it: lil-tui, the lab, or `lil splice apply ID` / "
    "`lil splice reject ID`"
)


def list_runs(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    """Runs newest first (by last update), filtered, one page."""
    from letitloop.journal import parse_since

    offset = offset_of(a.get("cursor"))
    since = parse_since(a.get("since"))
    found = operate.list_summaries(
        svc.journal,
        status=a.get("status"),
        workflow=a.get("workflow") or None,
        text=a.get("text") or "",
        limit=offset + a["limit"] + 1,
    )
    if since is not None:
        found = [r for r in found if r.updated >= since]
    chosen, cursor = page(found, offset, a["limit"])
    return {
        "runs": [shrink(operate.run_json(r)) for r in chosen],
        "next_cursor": cursor,
    }


def show_run(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    """One run in full, its attempts paged, with who intervened on it."""
    journal = svc.journal
    view = operate.run_view(journal, a["run"])
    data = operate.view_json(view)
    offset = offset_of(a.get("cursor"))
    attempts, cursor = page(data["attempts"], offset, a["attempts_limit"])
    if data["result"] is not None:
        data["result"]["preview"] = operate.truncate(data["result"]["preview"], RESULT_PREVIEW)
    data |= {
        "attempts": attempts,
        "attempts_total": len(view.attempts),
        "next_cursor": cursor,
        "decisions": [
            operate.decision_json(d) for d in operate.decisions(journal, view.run.run_id, 20)
        ],
    }
    if data["approvals"]:
        data["approvals_decided_by"] = APPROVALS_DECIDED_BY
    if data["effects"]:
        data["effects_decided_by"] = EFFECTS_DECIDED_BY
    return dict(shrink(data))


def step_output(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    """A page of one step's output as text."""
    attempt = a.get("attempt")
    out = operate.step_output(
        svc.journal, a["run"], int(a["position"]), None if attempt is None else int(attempt)
    )
    text = out.text or ""
    start, length = int(a["offset"]), int(a["length"])
    chunk = text[start : start + length]
    end = start + len(chunk)
    return {
        "run_id": out.run_id,
        "position": out.position,
        "attempt": out.attempt,
        "name": out.name,
        "status": out.status,
        "codec": out.codec,
        "size": out.size,
        "offset": start,
        "text": chunk if out.text is not None else None,
        "total_chars": len(text),
        "next_offset": end if end < len(text) else None,
        "cut": len(text) >= operate.MAX_OUTPUT,  # the text stops there: the output is longer
    }


def effects_in_doubt(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    journal = svc.journal
    run_id = journal.find_run(a["run"]) if a.get("run") else None
    offset = offset_of(a.get("cursor"))
    chosen, cursor = page(operate.doubts(journal, run_id), offset, a["limit"])
    return {
        "effects": [shrink(operate.doubt_json(d)) for d in chosen],
        "next_cursor": cursor,
        "decided_by": EFFECTS_DECIDED_BY,
    }


def approvals(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    journal = svc.journal
    run_id = journal.find_run(a["run"]) if a.get("run") else None
    rows = journal.approvals(status=a.get("status") or "pending", run_id=run_id, limit=HUGE)
    rows = sorted(rows, key=lambda r: (r.created, r.id))
    chosen, cursor = page(rows, offset_of(a.get("cursor")), a["limit"])
    return {
        "approvals": [shrink(operate.approval_json(r)) for r in chosen],
        "next_cursor": cursor,
        "decided_by": APPROVALS_DECIDED_BY,
    }


def splice_proposals(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    rows = svc.journal.proposals(a.get("state"))
    chosen, cursor = page(rows, offset_of(a.get("cursor")), a["limit"])
    return {
        "proposals": [shrink(operate.proposal_json(p), 4000) for p in chosen],
        "next_cursor": cursor,
        "decided_by": PROPOSALS_DECIDED_BY,
    }


def notifications(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    offset = offset_of(a.get("cursor"))
    rows = svc.journal.notifications(state=a.get("state"), limit=offset + a["limit"] + 1)
    chosen, cursor = page(rows, offset, a["limit"])
    found = [shrink(operate.notice_json(n)) for n in chosen]
    return {"notifications": found, "next_cursor": cursor}


def rate_limits(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    return {"limits": shrink(svc.journal.capacity())}


def journal_sql(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    from letitloop.journal import read_query

    table, more = read_query(svc.journal, a["query"], a["limit"])
    rows = [[_cell(v) for v in row] for row in table.rows]
    return {
        "columns": list(table.columns),
        "rows": shrink(rows, 500),
        "row_count": len(rows),
        "truncated": more,
    }


def _cell(value: Any) -> Any:
    """A value as JSON carries it: bytes (a step's stored output) by their size, never decoded."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    return str(value)


def queues(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    """``lil queue list --json``, each list cut at ``limit`` (saying so)."""
    fleet = operate.fleet_json(svc.journal)
    most = a["limit"]
    cut = {k: len(v) for k, v in fleet.items() if len(v) > most}
    answer = {k: [shrink(x) for x in v[:most]] for k, v in fleet.items()}
    return answer | {"truncated": cut}


def report(svc: Service, a: dict[str, Any]) -> dict[str, Any]:
    """What `lil report --json` prints, and its numbers as every surface writes them."""
    from letitloop.journal import parse_since, summary

    s = summary(svc.journal, parse_since(a.get("since")), a["top"])
    data = dataclasses.asdict(s)
    data["shown"] = {
        "since": operate.since_words(s.since),
        "cost": operate.dollars(s.cost_usd),
        "saved": operate.dollars(s.saved_usd),
        "failure_rate": operate.pct(s.failed_runs / s.runs if s.runs else None),
        "daily_cost": operate.sparkline(s.daily_cost),
    }
    return dict(shrink(data, 500))


READS = {
    "list_runs": (list_runs, "runs"),
    "show_run": (show_run, "attempts"),
    "step_output": (step_output, None),
    "effects_in_doubt": (effects_in_doubt, "effects"),
    "approvals": (approvals, "approvals"),
    "splice_proposals": (splice_proposals, "proposals"),
    "notifications": (notifications, "notifications"),
    "rate_limits": (rate_limits, "limits"),
    "journal_sql": (journal_sql, "rows"),
    "queues": (queues, None),
    "report": (report, None),
}
__all__ = ["READS", "WHERE_PEOPLE_DECIDE"]
