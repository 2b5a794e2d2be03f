"""The owner's read operations: each runs on its database thread, after the fold.

Every function takes the owner, the request and the runs whose leases are held (read from the
live state, which only the event loop changes), and returns the reply's fields.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from letitloop._version import __version__ as VERSION
from letitloop.errors import JournalError
from letitloop.journal._config import env_float
from letitloop.journal.duckdb import _wire

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal.duckdb.owner._base import OwnerBase as Owner

# rows one ``runs``, ``events``, ``approvals``, ``cache_list`` or ``notices`` reply holds at most,
# whatever the limit asked: a reply is built whole in the owner's memory
MAX_ROWS = int(env_float("LIL_OWNER_MAX_ROWS", 10_000))


def _read_output(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    return {"out": owner.store.output(req["run"], req["epoch"], req["pos"], req["att"])}


def capped(req: dict[str, Any], default: int) -> tuple[int, bool]:
    """The rows one reply may hold: what ``req`` asks, at most ``MAX_ROWS`` (True if capped:
    the client asks for the next page)."""
    asked = req.get("limit", default)
    return min(asked, MAX_ROWS), asked > MAX_ROWS


def _read_runs(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    limit, more = capped(req, 100)
    runs = owner.store.list_runs(
        req.get("status"), req.get("workflow"), limit, held, before=req.get("before")
    )
    for run in runs:
        entry = owner.state.runs.get(run["run"])
        run["holder"] = entry.holder.split("/", 1)[0] if entry and entry.holder else None
    return {"runs": runs, "more": more and len(runs) == limit}


def _read_events(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    limit, more = capped(req, 1000)
    events = owner.store.events(req["after"], req.get("run"), limit)
    return {"events": events, "more": more and len(events) == limit}


def _read_run(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    runs = owner.store.list_runs(None, None, 1, held, run_id=req["run"])
    run = runs[0] if runs else None
    if run is None:
        raise JournalError(f"no run {req['run']!r} in this journal", run_id=req["run"])
    entry = owner.state.runs.get(req["run"])
    run["holder"] = entry.holder.split("/", 1)[0] if entry and entry.holder else None
    attempts = owner.store.attempts(req["run"], run["epoch"])
    entry_point, args = owner.store.entry(req["run"])
    return {
        "run": run,
        "attempts": attempts,
        "result": owner.store.result(req["run"]),
        "entry": entry_point,
        "args": args,
    }


def _read_stats(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    return {
        "stats": owner.stats
        | owner.store.stats()
        | {
            "lg_heads": dict(owner.lg_heads.stats),
            "pid": os.getpid(),
            "version": VERSION,
            "uptime_s": round(time.time() - owner.started, 1),
            "journal": str(owner.paths.db),
            "journal_id": owner.store.journal_id,
            "folded_lsn": owner.store.folded_lsn,
            "quarantined": owner.store.quarantined,
            "log_end": owner.log.end,
            "clients": len(owner.conns),
            "loaded_runs": len(owner.state.runs),
        }
    }


def _read_quarantine(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    """The records the owner could not fold; with ``action`` (drop/retry), resolve them."""
    done = None
    if req.get("action"):
        done = owner.store.resolve_quarantine(req.get("lsn"), str(req["action"]))
        owner.inbox.append(("lgreset",))  # a retried record may change a thread's checkpoints
    return {"rows": owner.store.quarantine_rows(), "done": done}


def _read_gc(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    doomed = owner.store.gc(req["older_than"], req["statuses"], held)
    owner.inbox.append(("evict", doomed))
    owner.wake_w.send(b"x")
    return {"deleted": len(doomed)}


def _read_cache_get(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    return {"entry": owner.store.cache_get(req["key"])}


def _read_cache_list(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    return {"entries": owner.store.cache_list(capped(req, 100)[0])}


def _read_proposals(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    return {"proposals": owner.store.proposals(req.get("state"))}


def _read_board(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    return {"board": owner.store.board(req["run"], req.get("key"), bool(req.get("history")))}


def _read_approvals(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    rows = owner.store.approvals(req.get("status"), req.get("run"), capped(req, 100)[0])
    return {"approvals": rows}


def _read_results(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    if len(req["runs"]) > _wire.RESULTS_PER_REQUEST:
        raise JournalError(
            f"a results request names {len(req['runs'])} runs, more than "
            f"{_wire.RESULTS_PER_REQUEST}",
            fix="ask in chunks (the client does)",
        )
    return {"results": owner.store.results(req["runs"])}


def _read_checkpoints(owner: Owner, req: dict[str, Any], held: list[str]) -> dict[str, Any]:
    """Checkpoints from DuckDB; an answer about a thread's newest one (and, once, the threads
    that have any) is also handed to the event loop, which answers the next ones from memory."""
    rows = owner.store.checkpoints(req)
    heads = owner.lg_heads
    if heads.latest(req) is not None and req.get("cid") is None:
        head = rows[0][2] if rows else None
        early = owner.store.lg.early_writes(req["thread"], req["ns"], head)
        owner.inbox.append(("lghead", req, rows, early, owner.store.folded_lsn))
        if heads.want_pairs:
            heads.want_pairs = False
            owner.inbox.append(("lgpairs", owner.store.lg.pairs(), owner.store.folded_lsn))
    return {"rows": rows}


#: reads the database thread hands on to the query thread (``_queries``): they may run 30 s
QUERIES = frozenset({"sql"})

READS: dict[str, Callable[[Owner, dict[str, Any], list[str]], dict[str, Any]]] = {
    "output": _read_output,
    "runs": _read_runs,
    "run": _read_run,
    "run_ids": lambda o, r, h: {"runs": o.store.run_ids()},
    "results": _read_results,
    "events": _read_events,
    "stats": _read_stats,
    "gc": _read_gc,
    "quarantine": _read_quarantine,  # its resolution writes too: on the database thread
    "cache_get": _read_cache_get,
    "cache_list": _read_cache_list,
    "proposals": _read_proposals,
    "approvals": _read_approvals,
    "board": _read_board,
    "checkpoints": _read_checkpoints,
}
