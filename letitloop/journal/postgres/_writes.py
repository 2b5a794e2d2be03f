"""Records into tables: what one accepted record changes in the PostgreSQL journal.

``project`` runs inside the writing transaction, after the shared state machine accepted the
records, so the tables change exactly when the records commit. The projections are the ones
every backend shares (``journal._rows``), in PostgreSQL's dialect; every record also becomes one
``events`` row whose unique natural key makes a resend after a reconnect a no-op.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from letitloop.journal import _rows
from letitloop.journal._checkpoints import run_id_of
from letitloop.journal._records import CHECKPOINT_KINDS, Record, natural_key, without_payload
from letitloop.journal.postgres._schema import SEQ_SHIFT

_STEP_COLS = _rows.STEP_COLS
_UPSERT_STEP = (
    f"INSERT INTO steps ({', '.join(_STEP_COLS)}) VALUES ({', '.join(['%s'] * len(_STEP_COLS))}) "
    f"ON CONFLICT (run_id, epoch, position, attempt) DO UPDATE SET {_rows.STEP_MERGE}"
)
_INSERT_EVENTS = (
    "INSERT INTO events (seq, key, run_id, kind, epoch, position, attempt, name, ts, data) "
    f"SELECT (pg_current_xact_id()::text::bigint << {SEQ_SHIFT}) + u.o, u.k, u.r, u.kind, u.ep, "
    "u.pos, u.att, u.nm, u.ts, u.d::jsonb FROM unnest(%s::text[], %s::text[], %s::text[], "
    "%s::int[], %s::int[], %s::int[], %s::text[], %s::float8[], %s::text[]) WITH ORDINALITY "
    "AS u(k, r, kind, ep, pos, att, nm, ts, d, o) ON CONFLICT (key) DO NOTHING"
)
_NAME_SQL = (
    "coalesce(meta->>'source', 'checkpoint') || ' ' || coalesce(meta->>'step', '') || "
    "CASE WHEN ns <> '' THEN ' [' || ns || ']' ELSE '' END"
)


# The hot path's one statement: the fence (``lil_fence``: nobody wrote to the run since this
# process read it, and its lease is still ours) and the records' events and step rows, as JSON
# parameters (one round trip; psycopg prepares it after a few calls). Any error, the fence's
# included, rolls the whole statement back.
_HOT = (
    "WITH f AS MATERIALIZED (SELECT lil_fence(%s, %s, %s, %s) AS rev{sync}), "
    "e AS (INSERT INTO events (seq, key, run_id, kind, epoch, position, attempt, name, ts, data) "
    f"SELECT (pg_current_xact_id()::text::bigint << {SEQ_SHIFT}) + u.o, u.v->>0, u.v->>1, "
    "u.v->>2, (u.v->>3)::int, (u.v->>4)::int, (u.v->>5)::int, u.v->>6, (u.v->>7)::float8, "
    "u.v->8 FROM f, jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS u(v, o) "
    "ON CONFLICT (key) DO NOTHING), "
    f"s AS (INSERT INTO steps ({', '.join(_STEP_COLS)}) SELECT "
    f"{', '.join('x.' + c for c in _STEP_COLS)} FROM f, "
    "jsonb_populate_recordset(NULL::steps, %s::jsonb) AS x "
    + _UPSERT_STEP[_UPSERT_STEP.index("ON CONFLICT") :]
    + ") SELECT rev FROM f"
)
HOT_SYNC = _HOT.format(sync="")
HOT_UNWAITED = _HOT.format(sync=", set_config('synchronous_commit', 'off', true)")


def hot_params(records: Sequence[Record]) -> tuple[str, str] | None:
    """The JSON parameters (events, step rows) of ``HOT_SYNC`` for records that change only
    ``events`` and ``steps``; None when one of them needs another table (the caller projects)."""
    steps: dict[_rows.StepKey, dict[str, Any]] = {}
    events = []
    for rec in records:
        k = rec["k"]
        if "pos" not in rec or k in ("rewind", "answer") or (k == "step" and rec.get("ask")):
            return None
        _rows.merge_step(steps, rec)
        events.append(
            (
                natural_key(rec),
                rec["run"],
                k,
                rec.get("epoch"),
                rec.get("pos"),
                rec.get("att"),
                rec.get("name"),
                rec["ts"],
                without_payload(rec),
            )
        )
    rows = []
    for key, row in steps.items():
        values: dict[str, Any] = dict(zip(_rows.KEY_COLS, key, strict=True)) | row
        if (out := values.get("output")) is not None:
            values["output"] = "\\x" + out.hex()
        if (err := values.get("error")) is not None:
            values["error"] = json.loads(err)
        rows.append(values)
    return json.dumps(events, default=str), json.dumps(rows, default=str)


def project(cur: Any, records: Sequence[Record]) -> None:
    """Write the tables' side of ``records`` (already accepted, in order) on ``cur``."""
    if not records:
        return
    _insert_events(cur, records)
    steps: dict[_rows.StepKey, dict[str, Any]] = {}
    for rec in records:
        k = rec["k"]
        if k == "rewind":
            _flush_steps(cur, steps)
            _rewind(cur, rec)
        elif "pos" in rec and k != "answer":
            _rows.merge_step(steps, rec)
            if k == "step" and rec.get("ask"):
                _flush_steps(cur, steps)
                _ask(cur, rec)
        elif k == "answer":
            _answer(cur, rec)
        elif k in CHECKPOINT_KINDS:
            _flush_steps(cur, steps)
            _checkpoint(cur, rec)
        else:
            _flush_steps(cur, steps)
            _run_level(cur, rec)
    _flush_steps(cur, steps)


def _insert_events(cur: Any, records: Sequence[Record]) -> None:
    rows = [_rows.event_row(rec) for rec in records]
    cur.execute(_INSERT_EVENTS, [list(col) for col in zip(*rows, strict=True)])


def _flush_steps(cur: Any, steps: dict[_rows.StepKey, dict[str, Any]]) -> None:
    if not steps:
        return
    rows = _rows.step_rows(steps)
    steps.clear()
    cur.executemany(_UPSERT_STEP, rows)


def _rewind(cur: Any, rec: Record) -> None:
    for sql, params in _rows.rewind_statements(rec):
        cur.execute(_rows.pg(sql), params)


def _ask(cur: Any, rec: Record) -> None:
    sql, params = _rows.ask_statement(rec)
    cur.execute(_rows.pg(sql), params)


def _answer(cur: Any, rec: Record) -> None:
    sql, params = _rows.answer_statement(rec)
    cur.execute(_rows.pg(sql), params)


def _run_level(cur: Any, rec: Record) -> None:
    k, run_id, ts = rec["k"], rec["run"], rec["ts"]
    statements = _rows.run_statements(rec)
    if statements is not None:
        for sql, params in statements:
            cur.execute(_rows.pg(sql), params)
    elif k == "run":
        args = rec.get("args") or [None, None]
        cur.execute(
            "INSERT INTO runs (run_id, workflow, run_key, epoch, status, tries, created, updated,"
            " args_codec, args, entry, parent, started_by) VALUES (%s, %s, %s, %s, 'running', %s,"
            " %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET "
            "epoch = excluded.epoch, status = 'running', tries = greatest(runs.tries, "
            "excluded.tries), updated = excluded.updated, args_codec = excluded.args_codec, "
            "args = excluded.args, entry = excluded.entry, parent = excluded.parent, "
            "error = NULL, started_by = excluded.started_by",
            [run_id, rec["wf"], rec["key"], rec["epoch"], rec["try"], ts, ts, args[0], args[1]]
            + [rec["entry"], rec["parent"], rec["by"]],
        )
    elif k == "reset":
        cur.execute(
            "UPDATE runs SET status = 'reset', epoch = %s, tries = 0, result = NULL, "
            "result_codec = NULL, error = NULL, updated = %s WHERE run_id = %s",
            [rec["epoch"], ts, run_id],
        )
        sql, params = _rows.cancel_pending(run_id)
        cur.execute(_rows.pg(sql), params)
    elif k == "restart":
        cur.execute("UPDATE runs SET updated = %s WHERE run_id = %s", [ts, run_id])
    elif k == "cache":
        cur.execute(
            "INSERT INTO cache VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE "
            "SET fn = excluded.fn, created = excluded.created, expires = excluded.expires, "
            "codec = excluded.codec, output = excluded.output, cost_micros = excluded.cost_micros",
            [rec["key"], rec["fn"], ts, rec["expires"], rec["codec"], rec["out"], rec["cost"]],
        )
    elif k == "uncache":
        cur.execute("DELETE FROM cache WHERE %s::text IS NULL OR fn = %s", [rec["fn"], rec["fn"]])


# -- graph checkpoints ------------------------------------------------------------------------


def _checkpoint(cur: Any, rec: Record) -> None:
    k = rec["k"]
    if k == "lgput":
        cur.execute(
            "INSERT INTO lg_checkpoints VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s,"
            " %s) ON CONFLICT (thread_id, ns, checkpoint_id) DO UPDATE SET "
            "parent_id = excluded.parent_id, ctype = excluded.ctype, "
            "checkpoint = excluded.checkpoint, mtype = excluded.mtype, "
            "metadata = excluded.metadata, meta = excluded.meta, run_id = excluded.run_id, "
            "created = excluded.created, status = excluded.status",
            [rec["thread"], rec["ns"], rec["id"], rec["parent"], rec["ctype"], rec["cp"]]
            + [rec["mtype"], rec["meta"], rec["mjson"], rec["run_id"], rec["ts"], rec["status"]],
        )
        _thread_run(cur, rec["thread"], rec["wf"], rec["ts"], rec["status"], None)
        _checkpoint_step(cur, rec)
    elif k == "lgwrite":
        for idx, channel, vtype, value in rec["writes"]:
            verb = (
                "DO NOTHING"
                if idx >= 0
                else (
                    "DO UPDATE SET channel = excluded.channel, vtype = excluded.vtype, "
                    "value = excluded.value, task_path = excluded.task_path"
                )
            )
            cur.execute(
                "INSERT INTO lg_writes VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                f"ON CONFLICT (thread_id, ns, checkpoint_id, task_id, idx) {verb}",
                [rec["thread"], rec["ns"], rec["id"], rec["task"], idx, channel, vtype, value]
                + [rec["path"]],
            )
        _thread_run(cur, rec["thread"], None, rec["ts"], None, rec["err"])
    elif k == "lgcopy":
        src, dst, ts = rec["src"], rec["dst"], rec["ts"]
        cur.execute(
            "INSERT INTO lg_checkpoints SELECT %s, ns, checkpoint_id, parent_id, ctype, "
            "checkpoint, mtype, metadata, meta, run_id, created, status FROM lg_checkpoints "
            "WHERE thread_id = %s ON CONFLICT DO NOTHING",
            [dst, src],
        )
        cur.execute(
            "INSERT INTO lg_writes SELECT %s, ns, checkpoint_id, task_id, idx, channel, vtype, "
            "value, task_path FROM lg_writes WHERE thread_id = %s ON CONFLICT DO NOTHING",
            [dst, src],
        )
        cur.execute(
            "INSERT INTO runs (run_id, workflow, run_key, epoch, status, tries, created, updated)"
            " SELECT %s, workflow, %s, 0, status, 1, %s, %s FROM runs WHERE run_id = %s "
            "ON CONFLICT (run_id) DO UPDATE SET updated = excluded.updated, "
            "status = excluded.status",
            [rec["run"], dst, ts, ts, run_id_of(src)],
        )
        _sync_steps(cur, dst)
    elif k == "lgdel":
        for thread in _delete(cur, rec):
            _sync_steps(cur, thread)


# the thread's status: its newest root checkpoint's, suspended while an interrupt is pending,
# failed after an error write (journal._checkpoints.status_of, in SQL)
_HEAD_STATUS = (
    "(SELECT CASE WHEN EXISTS (SELECT 1 FROM lg_writes w WHERE w.thread_id = h.thread_id AND "
    "w.ns = '' AND w.checkpoint_id = h.checkpoint_id AND w.channel = '__interrupt__') THEN "
    "'suspended' WHEN EXISTS (SELECT 1 FROM lg_writes w WHERE w.thread_id = h.thread_id AND "
    "w.ns = '' AND w.checkpoint_id = h.checkpoint_id AND w.channel = '__error__') THEN 'failed' "
    "ELSE h.status END FROM lg_checkpoints h WHERE h.thread_id = %(thread)s AND h.ns = '' "
    "ORDER BY h.checkpoint_id DESC LIMIT 1)"
)


def _thread_run(
    cur: Any,
    thread: str,
    workflow: str | None,
    ts: float,
    put_status: str | None,
    error: dict[str, Any] | None,
) -> None:
    """Keep the thread's ``runs`` row showing its newest root checkpoint's state (one
    statement: a graph writes two records per node)."""
    params = {"run": run_id_of(thread), "thread": thread, "wf": workflow, "ts": ts}
    params |= {"put": put_status, "err": _rows.to_json(error)}
    if workflow is not None:  # a put: the thread becomes (or stays) a run
        cur.execute(
            "INSERT INTO runs (run_id, workflow, run_key, epoch, status, tries, created, updated)"
            f" VALUES (%(run)s, %(wf)s, %(thread)s, 0, coalesce({_HEAD_STATUS}, %(put)s), 1, "
            "%(ts)s, %(ts)s) ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, "
            "updated = excluded.updated",
            params,
        )
    else:  # writes of a thread with no checkpoint show nothing
        cur.execute(
            f"UPDATE runs SET status = v.s, updated = %(ts)s, error = CASE WHEN v.s = 'failed' "
            "THEN coalesce(%(err)s::jsonb, error) END FROM (SELECT "
            f"{_HEAD_STATUS} AS s) v WHERE run_id = %(run)s AND v.s IS NOT NULL",
            params,
        )


def _checkpoint_step(cur: Any, rec: Record) -> None:
    """The thread's run shows each checkpoint as a step: add this one's if it is new."""
    cur.execute(
        "INSERT INTO steps (run_id, epoch, position, attempt, kind, name, fingerprint, status, "
        "started, ended, size) SELECT %(run)s, 0, (SELECT coalesce(max(position), -1) + 1 FROM "
        f"steps WHERE run_id = %(run)s), 1, 'checkpoint', {_NAME_SQL}, checkpoint_id, "
        "'completed', created, created, octet_length(checkpoint) FROM lg_checkpoints c WHERE "
        "thread_id = %(thread)s AND ns = %(ns)s AND checkpoint_id = %(id)s AND NOT EXISTS "
        "(SELECT 1 FROM steps s WHERE s.run_id = %(run)s AND s.kind = 'checkpoint' AND "
        "s.fingerprint = c.checkpoint_id)",
        {"run": rec["run"], "thread": rec["thread"], "ns": rec["ns"], "id": rec["id"]},
    )


def _delete(cur: Any, rec: Record) -> list[str]:
    if rec["runs"] is not None:
        rows = cur.execute(
            "DELETE FROM lg_checkpoints WHERE run_id = ANY(%s) RETURNING thread_id", [rec["runs"]]
        ).fetchall()
        threads = sorted({r[0] for r in rows})
    else:
        threads = list(rec["threads"] or [])
        if rec["keep"] == "latest":
            cur.execute(
                "DELETE FROM lg_checkpoints c WHERE thread_id = ANY(%s) AND checkpoint_id < "
                "(SELECT max(d.checkpoint_id) FROM lg_checkpoints d WHERE "
                "d.thread_id = c.thread_id AND d.ns = c.ns)",
                [threads],
            )
        else:
            cur.execute("DELETE FROM lg_checkpoints WHERE thread_id = ANY(%s)", [threads])
    cur.execute(
        "DELETE FROM lg_writes w WHERE thread_id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM "
        "lg_checkpoints c WHERE c.thread_id = w.thread_id AND c.ns = w.ns AND "
        "c.checkpoint_id = w.checkpoint_id)",
        [threads],
    )
    return threads


def _sync_steps(cur: Any, thread: str) -> None:
    """Make the thread's ``steps`` rows (one per checkpoint) match its checkpoints."""
    run_id = run_id_of(thread)
    cur.execute(
        "DELETE FROM steps WHERE run_id = %s AND kind = 'checkpoint' AND fingerprint NOT IN "
        "(SELECT checkpoint_id FROM lg_checkpoints WHERE thread_id = %s)",
        [run_id, thread],
    )
    cur.execute(
        "INSERT INTO steps (run_id, epoch, position, attempt, kind, name, fingerprint, status, "
        "started, ended, size) SELECT %(run)s, 0, (SELECT coalesce(max(position), -1) FROM steps "
        "WHERE run_id = %(run)s) + row_number() OVER (ORDER BY checkpoint_id), 1, 'checkpoint', "
        f"{_NAME_SQL}, checkpoint_id, 'completed', created, created, octet_length(checkpoint) "
        "FROM lg_checkpoints c WHERE thread_id = %(thread)s AND NOT EXISTS (SELECT 1 FROM steps "
        "s WHERE s.run_id = %(run)s AND s.kind = 'checkpoint' AND s.fingerprint = "
        "c.checkpoint_id)",
        {"run": run_id, "thread": thread},
    )
    left = cur.execute(
        "SELECT count(*) FROM lg_checkpoints WHERE thread_id = %s", [thread]
    ).fetchone()
    if left is not None and left[0] == 0:
        cur.execute("DELETE FROM runs WHERE run_id = %s", [run_id])
