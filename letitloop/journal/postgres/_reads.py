"""Queries of the PostgreSQL journal: a run's live state for the state machine, and listings.

``load_entry`` rebuilds the ``RunEntry`` the shared state machine (``journal._state``) checks
records against, from the tables, inside the writer's transaction. The rest answer the
contract's read calls with the same rows the DuckDB store returns. A lease is *alive* when its
holder's heartbeat is younger than the lease TTL and the session the lease names still holds
the lease's advisory lock (``LEASE_ALIVE``): a killed process's
lock goes with its connection.
"""

from __future__ import annotations

import json
from typing import Any

from letitloop.journal._approvals import approval_fields
from letitloop.journal._checkpoints import matches
from letitloop.journal._contract import (
    ApprovalInfo,
    AttemptInfo,
    CacheEntry,
    CheckpointRow,
    CheckpointWrite,
    EventInfo,
    Proposal,
    RunInfo,
)
from letitloop.journal._preview import preview
from letitloop.journal._state import _WIRE_FIELDS, ACTIVE_KINDS, RunEntry
from letitloop.journal._store_queries import CHECKPOINTS_SELECT, checkpoint_where
from letitloop.journal.postgres._schema import SEQ_SHIFT

# the run's lease is held by a live process: fresh heartbeat, and the advisory lock of
# (run, token) granted to the holder's own session (runs r in scope; %(ttl)s seconds): any role
# may take an advisory lock, and one taken by another session (a read-only role's) must not
# keep a dead holder's run looking alive
LEASE_ALIVE = (
    "(r.holder IS NOT NULL AND r.heartbeat > now() - make_interval(secs => %(ttl)s) AND EXISTS "
    "(SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 "
    "AND l.pid = r.holder_pid "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.classid = (hashtext(r.run_id)::bigint & 4294967295)::oid "
    "AND l.objid = (r.lease_token & 4294967295)::oid))"
)
# events below every running transaction's: committed for good, so a cursor never skips one
VISIBLE = f"seq < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint << {SEQ_SHIFT})"


_EPOCH = "(SELECT epoch FROM runs WHERE run_id = %(run)s)"
_STEPS = (
    "SELECT position, attempt, kind, name, fingerprint, status, codec, output, error, "
    "next_position, resolution, resolved_by, coalesce(cost_micros, 0), "
    "coalesce(tokens_in, 0) + coalesce(tokens_out, 0), coalesce(saved_micros, 0) FROM steps "
    f"WHERE run_id = %(run)s AND epoch = {_EPOCH} ORDER BY position, attempt"
)
_ASKS = (
    "SELECT position, attempt, id, payload, schema, deadline, on_timeout, status, decided_by, "
    f"decided_at, comment, edited, timed_out FROM approvals WHERE run_id = %(run)s AND "
    f"epoch = {_EPOCH}"
)
_KEYS = f"SELECT array_agg(key) FROM events WHERE run_id = %(run)s AND epoch = {_EPOCH}"
_BOARD = (
    f"SELECT key, max(version) FROM board WHERE run_id = %(run)s AND epoch = {_EPOCH} GROUP BY key"
)


def load_entry(cur: Any, run_id: str, ttl: float, lock: bool) -> tuple[RunEntry, dict[str, Any]]:
    """The run's ``RunEntry`` and its lease row (holder, token, rev, alive); KeyError if none.

    Three queries sent at once (one round trip): the run, its latest attempts with their
    approvals, and the natural keys already written in its epoch."""
    params = {"run": run_id, "ttl": ttl}
    conn = cur.connection
    with conn.pipeline():
        head = conn.cursor().execute(
            "SELECT workflow, run_key, epoch, status, tries, created, updated, args_codec, "
            "args, entry, parent, result_codec, result, error, started_by, budget_micros, "
            f"budget_tokens, holder, lease_token, rev, {LEASE_ALIVE} FROM runs r "
            "WHERE run_id = %(run)s" + (" FOR UPDATE" if lock else ""),
            params,
        )
        steps_cur = conn.cursor().execute(_STEPS, params)
        asks_cur = conn.cursor().execute(_ASKS, params)
        keys_cur = conn.cursor().execute(_KEYS, params)
        board_cur = conn.cursor().execute(_BOARD, params)
        row = head.fetchone()
        attempts = steps_cur.fetchall()
        asks = {(a[0], a[1]): a[2:] for a in asks_cur.fetchall()}
        keys = keys_cur.fetchone()
        board = board_cur.fetchall()
    if row is None:
        raise KeyError(run_id)
    wf, key, epoch, status, tries, created, updated, a_codec, args, entry_pt, parent = row[:11]
    r_codec, result, error, started_by, b_micros, b_tokens, holder, token, rev, alive = row[11:]
    entry = RunEntry(run_id, wf, key, created)
    entry.updated, entry.epoch, entry.status, entry.tries = updated, epoch, status, tries
    entry.args = [a_codec, bytes(args)] if a_codec else None
    entry.entry, entry.parent = entry_pt, parent
    entry.result = (r_codec, bytes(result)) if r_codec else None
    entry.error, entry.started_by = error, started_by
    entry.budget = (b_micros, b_tokens) if b_micros is not None or b_tokens is not None else None
    entry.holder = holder if alive else None
    previous: Any = None
    for s in attempts:  # oldest attempt first: the latest of each position stays
        entry.cost_micros += s[12]
        entry.tokens += s[13]
        entry.saved_micros += s[14]
        error = s[8]
        again = previous is not None and previous[0] == s[0]
        if s[5] == "started" and s[2] == "step" and error is None and again:
            error = previous[8]  # the policy's counts carry forward to the new attempt
        previous = s
        out = bytes(s[7]) if s[7] is not None else None
        # the step in open_run's wire form: StepRecord's field order (journal._state)
        wire = [s[0], s[1], s[2], s[3], s[4], s[5], s[6], out, False, error, s[9], s[10]]
        step: dict[str, Any] = dict(zip(_WIRE_FIELDS, wire, strict=True))
        step["res_by"], step["wire"] = s[11], wire
        ask = asks.get((s[0], s[1]))
        if ask is not None:
            step.update(approval_fields(run_id, epoch, s[0], (*ask, s[1])))
        entry.steps[s[0]] = step
    for step in entry.steps.values():
        if step["status"] == "started" and not step["res"]:
            entry.current = step["name"]
    entry.keys = set(keys[0] or ()) if keys else set()
    entry.board = {b[0]: b[1] for b in board}
    return entry, {"holder": holder, "token": token, "rev": rev, "alive": bool(alive)}


# How long a run executed (``RunInfo.active_seconds``), as the live state counts it: each try
# of the current epoch lasts from its ``run`` record to the last record its process wrote
# (``journal._state._ACTIVE``), and the tries add up; the time between tries does not count.
_ACTIVE_SQL = (
    "SELECT sum(t.last - t.first) AS active FROM (SELECT min(e.ts) FILTER (WHERE e.kind = "
    "'run') AS first, max(e.ts) FILTER (WHERE e.kind IN ("
    + ", ".join(f"'{k}'" for k in sorted({"run", *ACTIVE_KINDS}))
    + ")) AS last FROM (SELECT kind, ts, count(*) FILTER (WHERE kind = "
    "'run') OVER (ORDER BY seq) AS n FROM events WHERE run_id = sel.run_id AND epoch = "
    "sel.epoch) e GROUP BY e.n) t WHERE t.first IS NOT NULL"
)


def list_runs(
    cur: Any,
    ttl: float,
    *,
    status: str | None,
    workflow: str | None,
    limit: int,
    run_id: str | None = None,
) -> list[RunInfo]:
    """Runs newest first; the runs are chosen before their steps are summed."""
    rows = cur.execute(
        "WITH r0 AS (SELECT r.*, "
        f"CASE WHEN {LEASE_ALIVE} THEN split_part(r.holder, '/', 1) END AS live FROM runs r "
        "WHERE (%(run)s::text IS NULL OR r.run_id = %(run)s) AND (%(wf)s::text IS NULL OR "
        "r.workflow = %(wf)s)), r AS (SELECT *, CASE WHEN status = 'running' AND live IS NULL "
        "THEN 'interrupted' ELSE status END AS st FROM r0), sel AS (SELECT * FROM r WHERE "
        "%(status)s::text IS NULL OR st = %(status)s ORDER BY updated DESC LIMIT %(limit)s) "
        "SELECT sel.run_id, sel.workflow, sel.run_key, sel.st, sel.epoch, sel.tries, "
        "sel.created, sel.updated, sel.live, sel.parent, sel.error, agg.done, agg.cost, "
        "agg.tokens, agg.saved, CASE WHEN sel.status = 'running' THEN agg.cur END, act.active, "
        "sel.budget_micros, sel.budget_tokens, agg.total FROM sel "
        "LEFT JOIN LATERAL (SELECT count(DISTINCT s.position) FILTER (WHERE s.status = "
        "'completed') AS done, count(DISTINCT s.position) AS total, "
        "coalesce(sum(s.cost_micros), 0) AS cost, "
        "coalesce(sum(s.tokens_in + s.tokens_out), 0) AS tokens, coalesce(sum(s.saved_micros), 0)"
        " AS saved, (array_agg(s.name ORDER BY s.position DESC) FILTER (WHERE s.status = "
        "'started' AND s.resolution IS NULL))[1] AS cur FROM steps s WHERE s.run_id = sel.run_id"
        f" AND s.epoch = sel.epoch) agg ON true LEFT JOIN LATERAL ({_ACTIVE_SQL}) act ON true "
        "ORDER BY sel.updated DESC",
        {"run": run_id, "wf": workflow, "status": status, "limit": limit, "ttl": ttl},
    ).fetchall()
    return [
        RunInfo(
            run_id=r[0],
            workflow=r[1],
            key=r[2],
            status=r[3],
            epoch=r[4],
            attempt=r[5],
            created=r[6],
            updated=r[7],
            steps_done=int(r[11] or 0),
            current_step=r[15],
            holder=r[8],
            parent=r[9],
            error=r[10],
            cost_micros=int(r[12] or 0),
            tokens=int(r[13] or 0),
            saved_micros=int(r[14] or 0),
            active_seconds=float(r[16] or 0.0),
            budget=None if r[17] is None and r[18] is None else (r[17], r[18]),
            steps_total=int(r[19] or 0),
        )
        for r in rows
    ]


def attempts(cur: Any, run_id: str, epoch: int) -> list[AttemptInfo]:
    rows = cur.execute(
        "SELECT position, attempt, kind, name, fingerprint, status, started, ended, codec, "
        "size, error, next_position, resolution, resolved_by, cost_micros, tokens_in, "
        "tokens_out, model, cache, shown, CASE WHEN size <= 4096 THEN output END FROM steps "
        "WHERE run_id = %s AND epoch = %s ORDER BY position, attempt",
        [run_id, epoch],
    ).fetchall()
    return [
        AttemptInfo(
            position=r[0],
            attempt=r[1],
            kind=r[2] or "step",
            name=r[3] or "?",
            fingerprint=r[4] or "",
            status=r[5],
            started=r[6],
            ended=r[7],
            codec=r[8],
            size=r[9] or 0,
            error=r[10],
            next_position=r[11],
            resolution=r[12],
            resolved_by=r[13],
            preview=preview(r[8], bytes(r[20]), shown=r[19]) if r[20] is not None else r[19],
            cost_micros=r[14] or 0,
            tokens_in=r[15] or 0,
            tokens_out=r[16] or 0,
            model=r[17],
            cache=r[18],
        )
        for r in rows
    ]


def events(cur: Any, after: int, run_id: str | None, limit: int) -> list[EventInfo]:
    rows = cur.execute(
        "SELECT seq, run_id, kind, position, attempt, name, ts, data FROM events "
        f"WHERE seq > %s AND {VISIBLE} AND (%s::text IS NULL OR run_id = %s) ORDER BY seq "
        "LIMIT %s",
        [after, run_id, run_id, limit],
    ).fetchall()
    return [EventInfo(*r) for r in rows]


def orphans(cur: Any, ttl: float) -> list[tuple[str, str]]:
    """Running runs that name a holder whose lease is not alive: (run id, "pid@host")."""
    rows = cur.execute(
        "SELECT run_id, split_part(holder, '/', 1) FROM runs r WHERE status = 'running' AND "
        f"holder IS NOT NULL AND NOT {LEASE_ALIVE}",
        {"ttl": ttl},
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def head(cur: Any) -> int:
    """The newest event a cursor may start after (everything older is final)."""
    row = cur.execute(f"SELECT coalesce(max(seq), 0) FROM events WHERE {VISIBLE}").fetchone()
    return int(row[0]) if row else 0


def approvals(cur: Any, status: str | None, run_id: str | None, limit: int) -> list[ApprovalInfo]:
    rows = cur.execute(
        "SELECT id, run_id, epoch, position, name, payload, schema, created, deadline, "
        "on_timeout, status, decided_by, decided_at, comment, edited, timed_out, attempt "
        "FROM approvals WHERE (%s::text IS NULL OR status = %s) AND (%s::text IS NULL OR "
        "run_id = %s) ORDER BY created DESC LIMIT %s",
        [status, status, run_id, run_id, limit],
    ).fetchall()
    out = []
    for r in rows:
        item = dict(zip(ApprovalInfo._fields, r, strict=True))
        for name in ("payload", "schema", "edited"):
            item[name] = json.loads(item[name]) if item[name] is not None else None
        out.append(ApprovalInfo(**item))
    return out


def cache_get(cur: Any, key: str) -> CacheEntry | None:
    r = cur.execute(
        "SELECT key, fn, created, expires, octet_length(output), cost_micros, codec, output "
        "FROM cache WHERE key = %s",
        [key],
    ).fetchone()
    if r is None:
        return None
    return CacheEntry(r[0], r[1], r[2], r[3], r[4] or 0, r[5], r[6], bytes(r[7]))


def cache_list(cur: Any, limit: int) -> list[CacheEntry]:
    rows = cur.execute(
        "SELECT key, fn, created, expires, coalesce(octet_length(output), 0), cost_micros "
        "FROM cache ORDER BY created DESC LIMIT %s",
        [limit],
    ).fetchall()
    return [CacheEntry(*r) for r in rows]


def proposals(cur: Any, state: str | None) -> list[Proposal]:
    rows = cur.execute(
        "SELECT id, path, target, code, reason, proposed_by, created, base, old, origin, "
        "state, decided_by, decided_at, note FROM proposals WHERE %s::text IS NULL OR "
        "state = %s ORDER BY created",
        [state, state],
    ).fetchall()
    return [Proposal(*r) for r in rows]


_WRITES_OF_ROW = (
    "LEFT JOIN LATERAL (SELECT array_agg(task_id ORDER BY task_path, task_id, idx) AS tasks, "
    "array_agg(idx ORDER BY task_path, task_id, idx) AS idxs, "
    "array_agg(channel ORDER BY task_path, task_id, idx) AS channels, "
    "array_agg(vtype ORDER BY task_path, task_id, idx) AS vtypes, "
    "array_agg(value ORDER BY task_path, task_id, idx) AS vals, "
    "array_agg(task_path ORDER BY task_path, task_id, idx) AS paths FROM lg_writes w "
    "WHERE w.thread_id = c.thread_id AND w.ns = c.ns AND w.checkpoint_id = c.checkpoint_id) w "
    "ON TRUE"
)


def _checkpoints_with_writes(
    cur: Any, where: list[str], params: list[Any], limit: int | None
) -> list[CheckpointRow]:
    """Checkpoints newest first with their writes, in one statement (no metadata filter)."""
    sql = (
        "SELECT c.thread_id, c.ns, c.checkpoint_id, parent_id, ctype, checkpoint, mtype, "
        "metadata, created, w.tasks, w.idxs, w.channels, w.vtypes, w.vals, w.paths FROM "
        f"lg_checkpoints c {_WRITES_OF_ROW} WHERE {' AND '.join(where)} "
        "ORDER BY c.checkpoint_id DESC, c.thread_id, c.ns"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    out = []
    for r in cur.execute(sql, params).fetchall():
        columns = zip(*[r[i] or [] for i in range(9, 15)], strict=True)
        writes = [CheckpointWrite(t, i, ch, (vt, bytes(v)), p) for t, i, ch, vt, v, p in columns]
        cp, meta = (r[4], bytes(r[5])), (r[6], bytes(r[7]))
        out.append(CheckpointRow(r[0], r[1], r[2], r[3], cp, meta, r[8], writes))
    return out


def checkpoints(cur: Any, req: dict[str, Any]) -> list[CheckpointRow]:
    """Checkpoints newest first, each with its pending writes."""
    where, params = checkpoint_where(req, "%s")
    flt: dict[str, Any] = req.get("filter") or {}
    limit = req.get("limit")
    if not flt:  # one round trip: each checkpoint with its writes (the latest: an index probe)
        return _checkpoints_with_writes(cur, where, params, limit)
    sql = CHECKPOINTS_SELECT.format(where=" AND ".join(where))
    rows: list[list[Any]] = []
    for r in cur.execute(sql, params).fetchall():
        if flt and not matches(r[9] or {}, flt):
            continue
        rows.append(list(r[:9]))
        if limit is not None and len(rows) >= limit:
            break
    if not rows:
        return []
    writes: dict[tuple[str, str, str], list[CheckpointWrite]] = {}
    for w in cur.execute(
        "SELECT w.thread_id, w.ns, w.checkpoint_id, task_id, idx, channel, vtype, value, "
        "task_path FROM lg_writes w JOIN unnest(%s::text[], %s::text[], %s::text[]) AS "
        "k(t, n, c) ON w.thread_id = k.t AND w.ns = k.n AND w.checkpoint_id = k.c "
        "ORDER BY task_path, task_id, idx",
        [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]],
    ).fetchall():
        item = CheckpointWrite(w[3], w[4], w[5], (w[6], bytes(w[7])), w[8])
        writes.setdefault((w[0], w[1], w[2]), []).append(item)
    return [
        CheckpointRow(
            r[0],
            r[1],
            r[2],
            r[3],
            (r[4], bytes(r[5])),
            (r[6], bytes(r[7])),
            r[8],
            writes.get((r[0], r[1], r[2]), []),
        )
        for r in rows
    ]
