"""What the owner reads from DuckDB: a run for the live state, listings, outputs, events.

Every read runs on the database thread after the fold (read-your-writes); ``lil journal sql``
runs on the query thread (``_sql``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import duckdb

from letitloop.errors import JournalError
from letitloop.journal import _rows
from letitloop.journal._approvals import COLUMNS as APPROVAL_COLS, approval_fields
from letitloop.journal._preview import preview
from letitloop.journal._store_queries import output_of, output_select
from letitloop.journal.duckdb.owner._checkpoint_store import CheckpointStore


class StoreReads:
    """The ``Store``'s reads (and its one deletion, ``gc``)."""

    db: duckdb.DuckDBPyConnection
    lg: CheckpointStore

    def load_run(self, run_id: str) -> dict[str, Any] | None:
        """Everything the live state needs to hold a run: header, latest attempts, keys."""
        row = self.db.execute(
            "SELECT workflow, run_key, epoch, status, tries, created, updated, args_codec, args,"
            " entry, parent, result_codec, result, error, started_by, budget_micros, budget_tokens,"
            " (SELECT coalesce(sum(cost_micros), 0) FROM steps s WHERE s.run_id = runs.run_id AND "
            "s.epoch = runs.epoch), (SELECT coalesce(sum(tokens_in::BIGINT + tokens_out), 0) FROM "
            "steps s WHERE s.run_id = runs.run_id AND s.epoch = runs.epoch) "
            "FROM runs WHERE run_id = ?",
            [run_id],
        ).fetchone()
        if row is None:
            return None
        wf, key, epoch, status, tries, created, updated, a_codec, args, entry, parent = row[:11]
        r_codec, result, error, started_by, b_micros, b_tokens, cost, tokens = row[11:]
        steps = self.db.execute(
            "SELECT position, attempt, kind, name, fingerprint, status, codec, "
            "CASE WHEN size <= 65536 THEN output END, size > 65536, "
            # a started step attempt carries the previous failure forward, as the live state does
            "CASE WHEN status = 'started' AND kind = 'step' THEN coalesce(error, lag(error) "
            "OVER (PARTITION BY position ORDER BY attempt)) ELSE error END, next_position, "
            "resolution, resolved_by FROM steps WHERE run_id = ? AND epoch = ? "
            "QUALIFY row_number() OVER (PARTITION BY position ORDER BY attempt DESC) = 1",
            [run_id, epoch],
        ).fetchall()
        keys = self.db.execute(
            "SELECT key FROM events WHERE run_id = ? AND epoch = ?", [run_id, epoch]
        ).fetchall()
        board = self.db.execute(
            "SELECT key, max(version) FROM board WHERE run_id = ? AND epoch = ? GROUP BY key",
            [run_id, epoch],
        ).fetchall()
        asks = {
            (r[0], r[-1]): r[1:]
            for r in self.db.execute(
                "SELECT position, id, payload, schema, deadline, on_timeout, status, decided_by, "
                "decided_at, comment, edited, timed_out, attempt FROM approvals WHERE run_id = ? "
                "AND epoch = ?",
                [run_id, epoch],
            ).fetchall()
        }
        return {
            "run": run_id,
            "wf": wf,
            "key": key,
            "epoch": epoch,
            "status": status,
            "try": tries,
            "created": created,
            "updated": updated,
            "args": [a_codec, args] if a_codec else None,
            "entry": entry,
            "parent": parent,
            "result": [r_codec, result] if r_codec else None,
            "error": json.loads(error) if error else None,
            "started_by": started_by,
            "cost": int(cost),
            "tokens": int(tokens),
            "budget": [b_micros, b_tokens]
            if b_micros is not None or b_tokens is not None
            else None,
            "keys": [k[0] for k in keys],
            "board": {b[0]: b[1] for b in board},
            "steps": [
                {
                    "pos": s[0],
                    "att": s[1],
                    "kind": s[2],
                    "name": s[3],
                    "fp": s[4],
                    "status": s[5],
                    "codec": s[6],
                    "out": s[7],
                    "big": bool(s[8]),
                    "err": json.loads(s[9]) if s[9] else None,
                    "next": s[10],
                    "res": s[11],
                    "res_by": s[12],
                }
                | approval_fields(run_id, epoch, s[0], asks.get((s[0], s[1])))
                for s in steps
            ],
        }

    def board(self, run_id: str, key: str | None, history: bool) -> list[Any]:
        """[epoch, rows] of the run's blackboard (``journal._rows.BOARD_SELECT``)."""
        row = self.db.execute("SELECT epoch FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
        rows = self.db.execute(
            _rows.BOARD_SELECT, _rows.board_params(run_id, row[0], key, history)
        ).fetchall()
        return [row[0], [list(r) for r in rows]]

    def approvals(self, status: str | None, run_id: str | None, limit: int) -> list[list[Any]]:
        rows = self.db.execute(
            f"SELECT {', '.join(APPROVAL_COLS)} FROM approvals WHERE (? IS NULL OR status = ?) "
            "AND (? IS NULL OR run_id = ?) ORDER BY created DESC LIMIT ?",
            [status, status, run_id, run_id, limit],
        ).fetchall()
        return [list(r) for r in rows]

    def output(self, run_id: str, epoch: int, position: int, attempt: int) -> list[Any]:
        row = self.db.execute(output_select("?"), [run_id, epoch, position, attempt]).fetchone()
        return list(output_of(row, run_id, epoch, position, attempt))

    def list_runs(
        self,
        status: str | None,
        workflow: str | None,
        limit: int,
        held: list[str],
        run_id: str | None = None,
        before: list[Any] | None = None,
    ) -> list[dict[str, Any]]:
        # the runs are chosen (filter, order, limit) before their steps are summed, so a listing
        # of the newest runs, or of one run, never aggregates the whole steps table
        rows = self.db.execute(
            "WITH r AS (SELECT run_id, workflow, run_key, status, CASE WHEN status = 'running' "
            "AND NOT list_contains($held, run_id) THEN 'interrupted' ELSE status END AS st, "
            "epoch, tries, created, updated, parent, error, budget_micros, budget_tokens, "
            "coalesce(busy, 0) + coalesce(last_active - try_started, 0) AS active FROM runs "
            "WHERE ($run IS NULL OR run_id = $run) AND ($workflow IS NULL OR workflow = "
            "$workflow) AND ($status IS NULL OR st = $status) AND ($bu IS NULL OR updated < $bu OR "
            "(updated = $bu AND run_id < $br)) ORDER BY updated DESC, run_id DESC LIMIT $limit),"
            " agg AS (SELECT s.run_id, count(DISTINCT s.position) FILTER (WHERE s.status = "
            "'completed') AS done, count(DISTINCT s.position) AS total, "
            "coalesce(sum(s.cost_micros), 0) AS cost, "
            "coalesce(sum(s.tokens_in::BIGINT + s.tokens_out), 0) AS tokens, "
            "coalesce(sum(s.saved_micros), 0) AS saved, arg_max(s.name, s.position) FILTER "
            "(WHERE s.status = 'started' AND s.resolution IS NULL) AS current FROM steps s "
            "JOIN r ON s.run_id = r.run_id AND s.epoch = r.epoch GROUP BY s.run_id) "
            "SELECT r.run_id, r.workflow, r.run_key, r.st, r.epoch, r.tries, r.created, "
            "r.updated, r.parent, r.error, coalesce(agg.done, 0), coalesce(agg.cost, 0), "
            "coalesce(agg.tokens, 0), coalesce(agg.saved, 0), CASE WHEN r.status = 'running' "
            "THEN agg.current END, r.active, r.budget_micros, r.budget_tokens, "
            "coalesce(agg.total, 0) "
            "FROM r LEFT JOIN agg ON agg.run_id = r.run_id "
            "ORDER BY r.updated DESC, r.run_id DESC",
            {"held": held, "status": status, "workflow": workflow, "limit": limit, "run": run_id}
            | {"bu": before[0] if before else None, "br": before[1] if before else None},
        ).fetchall()
        names = (
            "run wf key status epoch try created updated parent error done cost tokens saved "
            "current active budget_usd budget_tokens total"
        ).split()
        out = []
        for row in rows:
            item = dict(zip(names, row, strict=True))
            item["error"] = json.loads(item["error"]) if item["error"] else None
            usd, tokens = item.pop("budget_usd"), item.pop("budget_tokens")
            item["budget"] = [usd, tokens] if usd is not None or tokens is not None else None
            out.append(item)
        return out

    def cache_get(self, key: str) -> list[Any] | None:
        row = self.db.execute(
            "SELECT codec, output, cost_micros, created, expires FROM cache WHERE key = ?", [key]
        ).fetchone()
        return None if row is None else list(row)

    def cache_list(self, limit: int) -> list[list[Any]]:
        rows = self.db.execute(
            "SELECT key, fn, created, expires, octet_length(output), cost_micros FROM cache "
            "ORDER BY created DESC LIMIT ?",
            [limit],
        ).fetchall()
        return [list(r) for r in rows]

    def proposals(self, state: str | None) -> list[list[Any]]:
        rows = self.db.execute(
            "SELECT id, path, target, code, reason, proposed_by, created, base, old, origin, "
            "state, decided_by, decided_at, note FROM proposals WHERE ? IS NULL OR state = ? "
            "ORDER BY created",
            [state, state],
        ).fetchall()
        return [list(r) for r in rows]

    def checkpoints(self, req: dict[str, Any]) -> list[list[Any]]:
        return self.lg.query(req)

    def run_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT run_id FROM runs").fetchall()]

    def attempts(self, run_id: str, epoch: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT position, attempt, kind, name, fingerprint, status, started, ended, codec, "
            "size, error, next_position, resolution, resolved_by, cost_micros, tokens_in, "
            "tokens_out, model, cache, shown, "
            "CASE WHEN size <= 4096 THEN output END FROM steps WHERE run_id = ? AND epoch = ? "
            "ORDER BY position, attempt",
            [run_id, epoch],
        ).fetchall()
        names = (
            "pos att kind name fp status started ended codec size err next res res_by cost tin "
            "tout model cache shown"
        ).split()
        out = []
        for row in rows:
            item = dict(zip(names, row[:-1], strict=True))
            item["err"] = json.loads(item["err"]) if item["err"] else None
            shown = item.pop("shown")
            item["preview"] = (
                preview(row[8], row[-1], shown=shown) if row[-1] is not None else shown
            )
            out.append(item)
        return out

    def results(self, run_ids: list[str]) -> list[list[Any]]:
        """[run id, codec, result] of those of ``run_ids`` that completed."""
        rows = self.db.execute(
            "SELECT run_id, result_codec, result FROM runs WHERE status = 'completed' AND "
            "result_codec IS NOT NULL AND run_id IN (SELECT unnest($1::VARCHAR[]))",
            [run_ids],
        ).fetchall()
        return [list(r) for r in rows]

    def result(self, run_id: str) -> list[Any] | None:
        """The run's encoded result and, for a pickled one, the repr kept when it was written."""
        row = self.db.execute(
            "SELECT result_codec, result, result_shown FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
        return [row[0], row[1], row[2]] if row and row[0] else None

    def entry(self, run_id: str) -> tuple[str | None, list[Any] | None]:
        """How to call the run's workflow again: its entry point and encoded arguments."""
        row = self.db.execute(
            "SELECT entry, args_codec, args FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
        if row is None:
            return None, None
        return row[0], ([row[1], row[2]] if row[1] else None)

    def events(self, after: int, run_id: str | None, limit: int) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT seq, run_id, kind, position, attempt, name, ts, data FROM events "
            "WHERE seq > ? AND (? IS NULL OR run_id = ?) ORDER BY seq LIMIT ?",
            [after, run_id, run_id, limit],
        ).fetchall()
        names = "seq run k pos att name ts".split()
        return [dict(zip(names, r[:-1], strict=True)) | {"data": json.loads(r[-1])} for r in rows]

    def gc(self, older_than: float, statuses: Sequence[str], held: list[str]) -> list[str]:
        doomed = [
            r[0]
            for r in self.db.execute(
                "SELECT run_id FROM runs WHERE list_contains(?, status) AND updated < ? AND NOT "
                "list_contains(?, run_id) AND workflow NOT LIKE 'langgraph:%'",
                [list(statuses), older_than, held],
            ).fetchall()
        ]
        if doomed:
            self.db.execute("BEGIN")
            for table in ("steps", "events", "approvals", "board", "runs"):
                self.db.execute(f"DELETE FROM {table} WHERE list_contains(?, run_id)", [doomed])
            self.db.execute("COMMIT")
        return doomed

    def stats(self) -> dict[str, Any]:
        row = self.db.execute(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM steps), "
            "(SELECT count(*) FROM events), (SELECT coalesce(sum(size), 0) FROM steps)"
        ).fetchone()
        assert row is not None
        return {"runs": row[0], "attempts": row[1], "events": row[2], "output_bytes": row[3]}
