"""The DuckDB projection of graph checkpoints (records in ``journal._checkpoints``), owner only.

Tables, created on open like the approvals table:

    lg_checkpoints(thread_id, ns, checkpoint_id, parent_id, ctype, checkpoint, mtype, metadata,
                   meta, run_id, created, status)
    lg_writes(thread_id, ns, checkpoint_id, task_id, idx, channel, vtype, value, task_path)

Each thread is also a ``runs`` row and each checkpoint a ``steps`` row of kind ``checkpoint``.
A graph writes two records per node, so puts and writes fold in bulk (four statements a batch
whatever its size), with what each thread's row needs (its newest root checkpoint, that
checkpoint's write channels, the next step position) kept in memory between batches.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from letitloop.journal._checkpoints import matches, run_id_of, status_of, step_name
from letitloop.journal._store_queries import CHECKPOINTS_SELECT, checkpoint_where

TABLES = """
CREATE TABLE IF NOT EXISTS lg_checkpoints(
  thread_id VARCHAR NOT NULL, ns VARCHAR NOT NULL, checkpoint_id VARCHAR NOT NULL,
  parent_id VARCHAR, ctype VARCHAR NOT NULL, checkpoint BLOB NOT NULL, mtype VARCHAR NOT NULL,
  metadata BLOB NOT NULL, meta JSON, run_id VARCHAR, created DOUBLE NOT NULL,
  status VARCHAR NOT NULL, PRIMARY KEY (thread_id, ns, checkpoint_id));
CREATE TABLE IF NOT EXISTS lg_writes(
  thread_id VARCHAR NOT NULL, ns VARCHAR NOT NULL, checkpoint_id VARCHAR NOT NULL,
  task_id VARCHAR NOT NULL, idx INTEGER NOT NULL, channel VARCHAR NOT NULL,
  vtype VARCHAR NOT NULL, value BLOB NOT NULL, task_path VARCHAR NOT NULL,
  PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx));
"""
_NAME_SQL = (
    "coalesce(json_extract_string(meta, '$.source'), 'checkpoint') || ' ' || "
    "coalesce(json_extract_string(meta, '$.step'), '') || "
    "CASE WHEN ns <> '' THEN ' [' || ns || ']' ELSE '' END"
)
# plain INSERTs and UPDATEs: in DuckDB an ON CONFLICT clause costs more than the row itself
_INSERT_RUNS = (
    "INSERT INTO runs (run_id, workflow, run_key, epoch, status, tries, created, updated, error) "
    "SELECT r, w, k, 0, s, 1, u, u, e::JSON FROM (SELECT unnest($1) AS r, unnest($2) AS w, "
    "unnest($3) AS k, unnest($4) AS s, unnest($5) AS u, unnest($6) AS e)"
)
_UPDATE_RUNS = (
    "UPDATE runs SET status = v.s, updated = v.u, error = CASE WHEN v.s = 'failed' THEN "
    "coalesce(v.e::JSON, runs.error) END FROM (SELECT unnest($1) AS r, unnest($2) AS s, "
    "unnest($3) AS u, unnest($4) AS e) v WHERE runs.run_id = v.r"
)
_INSERT_STEPS = (
    "INSERT INTO steps (run_id, epoch, position, attempt, kind, name, fingerprint, status, "
    "started, ended, size) SELECT unnest($1), 0, unnest($2), 1, 'checkpoint', unnest($3), "
    "unnest($4), 'completed', unnest($5), unnest($5), unnest($6)"
)
CACHED_THREADS = 5000
UNPUT = 64  # checkpoints per thread with writes and no put yet that the cache tracks


class _Thread:
    """What the runs and steps rows of one thread need, kept between batches."""

    def __init__(self, db: Any, thread: str) -> None:
        head = db.execute(
            "SELECT checkpoint_id, status FROM lg_checkpoints WHERE thread_id = ? AND ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            [thread],
        ).fetchone()
        self.head: tuple[str, str] | None = (head[0], head[1]) if head else None
        self.channels: set[str] = set()
        if head is not None:
            self.channels = {
                c[0]
                for c in db.execute(
                    "SELECT DISTINCT channel FROM lg_writes WHERE thread_id = ? AND ns = '' AND "
                    "checkpoint_id = ?",
                    [thread, head[0]],
                ).fetchall()
            }
        shown = db.execute(
            "SELECT coalesce(max(position) + 1, 0), list(fingerprint) FROM steps "
            "WHERE run_id = ? AND kind = 'checkpoint'",
            [run_id_of(thread)],
        ).fetchone()
        self.next_pos: int = shown[0] if shown else 0
        self.shown: set[str] = set(shown[1] or []) if shown else set()  # checkpoint ids stored
        self.first_status: str | None = None
        # the writes of the checkpoints this cache inserted itself, newest few: exactly what
        # the table holds for them, so their new writes need no conflict check
        self.fresh: OrderedDict[tuple[str, str], set[tuple[str, int]]] = OrderedDict()
        # checkpoints that got writes before they were put ("async" durability sends a step's
        # writes beside its checkpoint): the table has writes of theirs, so never fresh. One
        # this cache cannot know of (written before it was made, or past UNPUT) costs a
        # conflict, which rolls the batch back and folds it again on a new cache (Store.fold)
        self.unput: OrderedDict[tuple[str, str], None] = OrderedDict()
        # write channels of root checkpoints newer than the head, not put yet: with LangGraph's
        # "async" durability an interrupt can reach the journal before its checkpoint does
        self.early: dict[str, set[str]] = {}
        exists = db.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id_of(thread)])
        self.has_run = bool((exists.fetchone() or [0])[0])


class CheckpointStore:
    """Folds checkpoint records into DuckDB and answers checkpoint queries (database thread)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        db.execute(TABLES)
        self.threads: OrderedDict[str, _Thread] = OrderedDict()

    def _thread(self, thread: str) -> _Thread:
        t = self.threads.get(thread)
        if t is None:
            t = self.threads[thread] = _Thread(self.db, thread)
            if len(self.threads) > CACHED_THREADS:
                self.threads.popitem(last=False)
        else:
            self.threads.move_to_end(thread)
        return t

    def fold(self, recs: Sequence[dict[str, Any]]) -> None:
        """Project checkpoint records, in log order, inside the store's fold transaction."""
        group: list[dict[str, Any]] = []
        for rec in recs:
            if rec["k"] in ("lgput", "lgwrite"):
                group.append(rec)
                continue
            self._fold_group(group)
            group = []
            touched = self._copy(rec) if rec["k"] == "lgcopy" else self._delete(rec)
            self._sync_steps(touched)
            for thread in touched:  # reloaded when next touched
                self.threads.pop(thread, None)
        self._fold_group(group)

    def rolled_back(self) -> None:
        """The fold transaction was rolled back: what the thread caches learned in it is not in
        the tables, so every thread is read again from them when next touched."""
        self.threads.clear()

    def _fold_group(self, recs: Sequence[dict[str, Any]]) -> None:
        if not recs:
            return
        cps: dict[tuple[str, str, str], list[Any]] = {}
        again: dict[tuple[str, str, str], list[Any]] = {}  # checkpoints put a second time
        plain: dict[tuple[str, str, str, str, int], list[Any]] = {}  # known to be new
        keep: dict[tuple[str, str, str, str, int], list[Any]] = {}
        replace: dict[tuple[str, str, str, str, int], list[Any]] = {}
        steps: list[list[Any]] = []
        runs: dict[str, list[Any]] = {}  # thread -> [run, wf, thread, status, ts, error]
        for rec in recs:
            thread, ns, cid = rec["thread"], rec["ns"], rec["id"]
            t = self._thread(thread)
            row = runs.setdefault(thread, [rec["run"], None, thread, None, 0.0, None])
            row[4] = rec["ts"]
            if rec["k"] == "lgput":
                if cid not in t.shown and (ns, cid) in t.unput:
                    del t.unput[(ns, cid)]  # the table has writes of it: conflicts are checked
                elif cid not in t.shown:
                    t.fresh[(ns, cid)] = set()
                    if len(t.fresh) > 8:
                        t.fresh.popitem(last=False)
                (again if cid in t.shown else cps)[(thread, ns, cid)] = [
                    thread, ns, cid, rec["parent"], rec["ctype"], rec["cp"], rec["mtype"],
                    rec["meta"], rec["mjson"], rec["run_id"], rec["ts"], rec["status"],
                ]  # fmt: skip
                row[1] = rec["wf"]
                t.first_status = t.first_status or rec["status"]
                if ns == "" and (t.head is None or cid >= t.head[0]):
                    if t.head is None or cid > t.head[0]:
                        t.channels = t.early.pop(cid, set())
                    t.head = (cid, rec["status"])
                if cid not in t.shown:
                    t.shown.add(cid)
                    name = step_name(rec["mjson"], ns)
                    steps.append([rec["run"], t.next_pos, name, cid, rec["ts"], len(rec["cp"])])
                    t.next_pos += 1
            else:
                known = t.fresh.get((ns, cid))
                if known is None and cid not in t.shown:
                    t.unput[(ns, cid)] = None
                    if len(t.unput) > UNPUT:  # one forgotten: a conflict, and the retry reloads
                        t.unput.popitem(last=False)
                for idx, channel, vtype, value in rec["writes"]:
                    key = (thread, ns, cid, rec["task"], idx)
                    values = [*key, channel, vtype, value, rec["path"]]
                    if known is not None and (rec["task"], idx) not in known:
                        known.add((rec["task"], idx))
                        plain[key] = values
                    elif idx < 0:
                        plain.pop(key, None)
                        replace[key] = values
                    elif known is None:
                        keep.setdefault(key, values)
                    if ns == "" and t.head is not None and cid == t.head[0]:
                        t.channels.add(channel)
                    elif ns == "" and (t.head is None or cid > t.head[0]) and len(t.early) < 64:
                        t.early.setdefault(cid, set()).add(channel)
                if rec["err"] is not None:
                    row[5] = json.dumps(rec["err"], default=str)
        for twice in again:
            cps.pop(twice, None)
        if cps:
            self._bulk("INSERT INTO lg_checkpoints", list(cps.values()), 12)
        if again:
            self._bulk("INSERT OR REPLACE INTO lg_checkpoints", list(again.values()), 12)
        if plain:
            self._bulk("INSERT INTO lg_writes", list(plain.values()), 9)
        if keep:
            self._bulk("INSERT OR IGNORE INTO lg_writes", list(keep.values()), 9)
        if replace:
            self._bulk("INSERT OR REPLACE INTO lg_writes", list(replace.values()), 9)
        new, changed = [], []
        for thread, row in runs.items():
            t = self.threads[thread]
            row[3] = status_of(t.head[1], t.channels) if t.head else t.first_status
            if row[3] is None:  # writes of a thread with no checkpoint show nothing
                continue
            if t.has_run:
                changed.append([row[0], row[3], row[4], row[5]])
            else:
                row[1] = row[1] or "langgraph:graph"
                new.append(row)
                t.has_run = True
        if new:
            self.db.execute(_INSERT_RUNS, _columns(new, 6))
        if changed:
            self.db.execute(_UPDATE_RUNS, _columns(changed, 4))
        if steps:
            self.db.execute(_INSERT_STEPS, _columns(steps, 6))

    def _bulk(self, verb: str, rows: list[list[Any]], width: int) -> None:
        unnest = ", ".join(f"unnest(${i + 1})" for i in range(width))
        self.db.execute(f"{verb} SELECT {unnest}", _columns(rows, width))

    def _copy(self, rec: dict[str, Any]) -> list[str]:
        src, dst, ts = rec["src"], rec["dst"], rec["ts"]
        for table, cols in (
            ("lg_checkpoints", "ns, checkpoint_id, parent_id, ctype, checkpoint, mtype, metadata, "
             "meta, run_id, created, status"),
            ("lg_writes", "ns, checkpoint_id, task_id, idx, channel, vtype, value, task_path"),
        ):  # fmt: skip
            self.db.execute(
                f"INSERT OR REPLACE INTO {table} SELECT ?, {cols} FROM {table} WHERE thread_id = ?",
                [dst, src],
            )
        self.db.execute(
            "INSERT INTO runs (run_id, workflow, run_key, epoch, status, tries, created, updated)"
            " SELECT ?, workflow, ?, 0, status, 1, ?, ? FROM runs WHERE run_id = ? "
            "ON CONFLICT DO UPDATE SET updated = excluded.updated, status = excluded.status",
            [rec["run"], dst, ts, ts, run_id_of(src)],
        )
        return [dst]

    def _delete(self, rec: dict[str, Any]) -> list[str]:
        db = self.db
        if rec["runs"] is not None:
            rows = db.execute(
                "DELETE FROM lg_checkpoints WHERE list_contains(?, run_id) RETURNING thread_id",
                [rec["runs"]],
            ).fetchall()
            threads = sorted({r[0] for r in rows})
        else:
            threads = list(rec["threads"] or [])
            if rec["keep"] == "latest":
                db.execute(
                    "DELETE FROM lg_checkpoints c WHERE list_contains(?, thread_id) AND "
                    "checkpoint_id < (SELECT max(d.checkpoint_id) FROM lg_checkpoints d WHERE "
                    "d.thread_id = c.thread_id AND d.ns = c.ns)",
                    [threads],
                )
            else:
                db.execute(
                    "DELETE FROM lg_checkpoints WHERE list_contains(?, thread_id)", [threads]
                )
        db.execute(
            "DELETE FROM lg_writes w WHERE list_contains(?, thread_id) AND NOT EXISTS (SELECT 1 "
            "FROM lg_checkpoints c WHERE c.thread_id = w.thread_id AND c.ns = w.ns AND "
            "c.checkpoint_id = w.checkpoint_id)",
            [threads],
        )
        return threads

    def _sync_steps(self, threads: Sequence[str]) -> None:
        """Make the threads' ``runs``/``steps`` rows match their checkpoints after a copy or
        delete (rare operations: plain statements, no bulk)."""
        for thread in threads:
            run_id = run_id_of(thread)
            self.db.execute(
                "DELETE FROM steps WHERE run_id = ? AND kind = 'checkpoint' AND fingerprint NOT IN"
                " (SELECT checkpoint_id FROM lg_checkpoints WHERE thread_id = ?)",
                [run_id, thread],
            )
            self.db.execute(
                "INSERT INTO steps (run_id, epoch, position, attempt, kind, name, fingerprint, "
                "status, started, ended, size) SELECT $run, 0, (SELECT coalesce(max(position), -1)"
                " FROM steps WHERE run_id = $run) + row_number() OVER (ORDER BY checkpoint_id), 1,"
                f" 'checkpoint', {_NAME_SQL}, checkpoint_id, 'completed', created, created, "
                "octet_length(checkpoint) FROM lg_checkpoints c WHERE thread_id = $thread AND NOT "
                "EXISTS (SELECT 1 FROM steps s WHERE s.run_id = $run AND s.kind = 'checkpoint' "
                "AND s.fingerprint = c.checkpoint_id)",
                {"run": run_id, "thread": thread},
            )
            left = self.db.execute(
                "SELECT count(*) FROM lg_checkpoints WHERE thread_id = ?", [thread]
            ).fetchone()
            if left is not None and left[0] == 0:
                self.db.execute("DELETE FROM runs WHERE run_id = ?", [run_id])

    def pairs(self) -> set[tuple[str, str]]:
        """Every (thread, ns) that has a checkpoint or a write."""
        rows = self.db.execute(
            "SELECT thread_id, ns FROM lg_checkpoints UNION SELECT thread_id, ns FROM lg_writes"
        ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def early_writes(self, thread: str, ns: str, after: str | None) -> list[list[Any]]:
        """Writes saved for checkpoints newer than ``after`` (not put yet), as
        [checkpoint_id, task_id, idx, channel, vtype, value, task_path]."""
        rows = self.db.execute(
            "SELECT checkpoint_id, task_id, idx, channel, vtype, value, task_path FROM lg_writes "
            "WHERE thread_id = ? AND ns = ? AND (? IS NULL OR checkpoint_id > ?)",
            [thread, ns, after, after],
        ).fetchall()
        return [list(r) for r in rows]

    def query(self, req: dict[str, Any]) -> list[list[Any]]:
        """Checkpoints newest first, each with its pending writes, as wire rows (see
        ``_checkpoints.row``)."""
        where, params = checkpoint_where(req, "?")
        flt: dict[str, Any] = req.get("filter") or {}
        limit = req.get("limit")
        sql = CHECKPOINTS_SELECT.format(where=" AND ".join(where))
        if limit is not None and not flt:
            sql += f" LIMIT {int(limit)}"
        rows: list[list[Any]] = []
        for r in self.db.execute(sql, params).fetchall():
            if flt and not matches(json.loads(r[9]) if r[9] else {}, flt):
                continue
            rows.append(list(r[:9]))
            if limit is not None and len(rows) >= limit:
                break
        if not rows:
            return rows
        writes: dict[tuple[str, str, str], list[list[Any]]] = {}
        for w in self.db.execute(  # every row's writes in one statement
            "SELECT w.thread_id, w.ns, w.checkpoint_id, task_id, idx, channel, vtype, value, "
            "task_path FROM lg_writes w JOIN (SELECT unnest($1) AS t, unnest($2) AS n, "
            "unnest($3) AS c) k ON w.thread_id = k.t AND w.ns = k.n AND w.checkpoint_id = k.c "
            "ORDER BY task_path, task_id, idx",
            _columns(rows, 3),
        ).fetchall():
            writes.setdefault((w[0], w[1], w[2]), []).append(list(w[3:]))
        for r in rows:
            r.append(writes.get((r[0], r[1], r[2]), []))
        return rows


def _columns(rows: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    return [[r[i] for r in rows] for i in range(width)]
