"""Records into rows: what one accepted record changes in a journal's tables, written once.

The DuckDB owner folds records into its tables (``duckdb.owner._folds``), PostgreSQL projects
them inside the writing transaction (``postgres._writes``) and the memory journal builds a run's
attempts from them (``_memory``): all three use these projections, so a record means the same
row everywhere. Statements are written with ``?`` placeholders (DuckDB's); ``pg`` gives a
statement in PostgreSQL's ``%s`` form. A backend writes its own SQL only where the dialects
differ (a run's start and reset, which DuckDB also times; the cache's upsert).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from letitloop.journal._contract import BoardEntry, BoardView
from letitloop.journal._records import Record, natural_key, without_payload

STEP_COLS = (
    "run_id epoch position attempt kind name fingerprint status started ended codec output size "
    "error next_position resolution resolved_by cost_micros tokens_in tokens_out model cache "
    "saved_micros shown"
).split()
KEY_COLS = ("run_id", "epoch", "position", "attempt")
# how a step row merges into the one already there: a started attempt never overwrites one that
# ended; a column the new row leaves empty keeps its value
STEP_MERGE = (
    "status = CASE WHEN excluded.status IS NULL OR (excluded.status = 'started' AND "
    "steps.status <> 'started') THEN steps.status ELSE excluded.status END, "
    + ", ".join(
        f"{c} = COALESCE(excluded.{c}, steps.{c})"
        for c in STEP_COLS
        if c not in KEY_COLS and c != "status"
    )
)

StepKey = tuple[str, int, int, int]
Statement = tuple[str, list[Any]]


# json.dumps(value, default=str), without making an encoder per call (folds call it per record)
_dumps = json.JSONEncoder(default=str).encode


def to_json(value: Any) -> str | None:
    """A record's structured field (an error, a payload) as the JSON text a table keeps."""
    return None if value is None else _dumps(value)


def keep(value: Any) -> Any:
    """``merge_step``'s ``dump`` for the memory journal, which keeps errors as they are."""
    return value


def event_row(rec: Record) -> tuple[Any, ...]:
    """The ``events`` row of any record: natural key, run, kind, epoch, position, attempt,
    name, time and the record without its payload (as JSON)."""
    return (
        natural_key(rec),
        rec["run"],
        rec["k"],
        rec.get("epoch"),
        rec.get("pos"),
        rec.get("att"),
        rec.get("name"),
        rec["ts"],
        _dumps(without_payload(rec)),
    )


def merge_step(
    steps: dict[StepKey, dict[str, Any]],
    rec: Record,
    dump: Callable[[Any], Any] = to_json,
) -> None:
    """Merge a step record (``step``, ``ok``, ``err``, ``resolve``) into its attempt's row, keyed
    by (run, epoch, position, attempt); ``dump`` turns its error into the stored form."""
    row = steps.setdefault((rec["run"], rec["epoch"], rec["pos"], rec["att"]), {})
    k = rec["k"]
    if k == "resolve":
        row.update(resolution=rec["res"], resolved_by=rec["by"])
        return
    row.update(kind=rec["kind"], name=rec["name"], fingerprint=rec["fp"])
    if k == "step":
        row.setdefault("status", "started")
        row["started"] = rec["ts"]
        return
    out = rec.get("out")
    row.update(
        status="completed" if k == "ok" else "failed",
        ended=rec["ts"],
        codec=rec.get("codec"),
        output=out,
        size=len(out) if out is not None else 0,
        error=dump(rec.get("err")),
        next_position=rec.get("next"),
        shown=rec.get("shown"),  # a pickled output's repr, taken when written
    )
    if cache := rec.get("cache"):
        row.update(cache="hit" if cache["hit"] else "miss", saved_micros=cache["saved"])
    if cost := rec.get("cost"):
        row.update(
            cost_micros=cost["usd_micros"],
            tokens_in=cost["in"],
            tokens_out=cost["out"],
            model=cost["model"],
        )


def step_rows(steps: dict[StepKey, dict[str, Any]]) -> list[list[Any]]:
    """The merged rows, each a list in ``STEP_COLS`` order."""
    rows = []
    for key, row in steps.items():
        values = dict(zip(KEY_COLS, key, strict=True)) | row
        rows.append([values.get(name) for name in STEP_COLS])
    return rows


def ask_statement(rec: Record) -> Statement:
    """A ``step`` record that asks for an approval: its pending ``approvals`` row."""
    a = rec["ask"]
    return (
        "INSERT INTO approvals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', "
        "NULL, NULL, NULL, NULL, false) ON CONFLICT DO NOTHING",
        [a["id"], rec["run"], rec["epoch"], rec["pos"], rec["att"], rec["name"]]
        + [a["payload"], a["schema"], rec["ts"], a["deadline"], a["on_timeout"]],
    )


def answer_statement(rec: Record) -> Statement:
    """An ``answer``: the approval's decision. The state machine already refused a second
    decision; the status guard keeps it so even for a writer that bypassed it."""
    return (
        "UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, comment = ?, "
        "edited = ?, timed_out = ? WHERE id = ? AND status = 'pending'",
        ["approved" if rec["ok"] else "rejected", rec["by"], rec["ts"]]
        + [rec["comment"], rec["payload"], rec["timeout"], rec["id"]],
    )


def rewind_statements(rec: Record) -> list[Statement]:
    """A ``rewind``: the run's attempts from its position on are superseded, and approvals
    asked before it are cancelled (later ones have new ids)."""
    where = "WHERE run_id = ? AND epoch = ? AND position >= ?"
    key = [rec["run"], rec["epoch"], rec["pos"]]
    return [
        (f"UPDATE steps SET status = 'superseded' {where}", key),
        (
            f"UPDATE approvals SET status = 'cancelled' {where} AND status = 'pending' "
            "AND created <= ?",
            [*key, rec["ts"]],
        ),
    ]


_CANCEL_PENDING = (
    "UPDATE approvals SET status = 'cancelled' WHERE run_id = ? AND status = 'pending'"
)


def run_statements(rec: Record) -> list[Statement] | None:
    """What a run-level or journal-level record changes; None for the kinds a backend writes
    in its own dialect (``run``, ``reset``, ``restart``, ``cache``, ``uncache``)."""
    k, run_id, ts = rec["k"], rec["run"], rec["ts"]
    if k == "done":
        return [
            (
                "UPDATE runs SET status = 'completed', result_codec = ?, result = ?, "
                "error = NULL, updated = ?, result_shown = ? WHERE run_id = ?",
                [rec["codec"], rec["out"], ts, rec.get("shown"), run_id],
            )
        ]
    if k == "fail":
        return [
            (
                "UPDATE runs SET status = 'failed', error = ?, updated = ? WHERE run_id = ?",
                [to_json(rec["err"]), ts, run_id],
            )
        ]
    if k == "budget":
        return [
            (
                "UPDATE runs SET budget_micros = ?, budget_tokens = ?, updated = ? "
                "WHERE run_id = ?",
                [rec["usd_micros"], rec["tokens"], ts, run_id],
            )
        ]
    if k == "cancel":
        message = f"cancelled by {rec['by']}" + (f": {rec['reason']}" if rec["reason"] else "")
        error = to_json({"type": "letitloop.Cancelled", "message": message})
        return [
            (
                "UPDATE runs SET status = 'cancelled', error = ?, updated = ? WHERE run_id = ?",
                [error, ts, run_id],
            ),
            (_CANCEL_PENDING, [run_id]),
        ]
    if k == "suspend":
        error = to_json({"type": "letitloop.Suspended", "message": rec["reason"]})
        return [
            (
                "UPDATE runs SET status = 'suspended', error = ?, updated = ? WHERE run_id = ?",
                [error, ts, run_id],
            )
        ]
    if k == "board":
        return [
            (
                "INSERT INTO board VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [run_id, rec["epoch"], rec["key"], rec["ver"], rec["codec"], rec["out"]]
                + [len(rec["out"]), json.dumps(rec["tags"]), rec["pinned"], rec["by"], ts],
            )
        ]
    if k == "propose":
        return [
            (
                "INSERT INTO proposals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, "
                "NULL, NULL) ON CONFLICT DO NOTHING",
                [rec["id"], rec["path"], rec["target"], rec["code"], rec["reason"], rec["by"], ts]
                + [rec["base"], rec["old"], rec["origin"]],
            )
        ]
    if k == "decide":
        return [
            (
                "UPDATE proposals SET state = ?, decided_by = ?, decided_at = ?, note = ? "
                "WHERE id = ?",
                [rec["state"], rec["by"], ts, rec["note"], rec["id"]],
            )
        ]
    return None


BOARD_ROWS = 10_000  # entries one blackboard read returns at most (a reply is built whole)
# a blackboard's entries of one epoch, in the order they were written: with ``history`` every
# version, else each key's newest; parameters: run, epoch, key, key, history
BOARD_SELECT = (
    "SELECT key, version, codec, output, tags, pinned, written_by, ts FROM board b "
    "WHERE run_id = ? AND epoch = ? AND (CAST(? AS VARCHAR) IS NULL OR key = ?) AND (? OR "
    "version = (SELECT max(version) FROM board m WHERE m.run_id = b.run_id AND "
    f"m.epoch = b.epoch AND m.key = b.key)) ORDER BY ts, key, version LIMIT {BOARD_ROWS}"
)


def board_params(run_id: str, epoch: int, key: str | None, history: bool) -> list[Any]:
    return [run_id, epoch, key, key, history]


def board_view(run_id: str, epoch: int, rows: list[Any]) -> BoardView:
    """A ``BoardView`` from ``BOARD_SELECT``'s rows (or the memory journal's, alike)."""
    entries = []
    for key, version, codec, output, tags, pinned, by, ts in rows:
        tags = json.loads(tags) if isinstance(tags, str) else tags
        entries.append(
            BoardEntry(key, version, codec, bytes(output), tuple(tags), bool(pinned), by, ts)
        )
    return BoardView(run_id, epoch, entries)


def cancel_pending(run_id: str) -> Statement:
    """A run reset or cancelled: its pending approvals are cancelled."""
    return (_CANCEL_PENDING, [run_id])


@cache
def pg(sql: str) -> str:
    """A statement of this module in PostgreSQL's placeholder style (``%s``)."""
    return sql.replace("?", "%s")
