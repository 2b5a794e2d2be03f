"""Graph checkpoints (LangGraph threads) in the journal: records, wire rows, the memory twin.

A checkpointer (``letitloop.adapters.langgraph``) writes four journal-wide record kinds, each
carrying the thread's run id (``langgraph:<thread>``) so pushes and listings attribute it:

    lgput    a checkpoint saved        run thread ns id parent wf status ctype cp mtype meta mjson
                                       run_id ts
    lgwrite  a task's pending writes   run thread ns id task path writes status err ts
    lgdel    checkpoints deleted       run threads runs keep ts   (keep: "none" | "latest")
    lgcopy   a thread copied           run src dst ts

Values arrive already encoded by the checkpointer's serializer as (type, bytes) pairs: the
journal never decodes them. ``mjson`` is the metadata as JSON text, used only to filter.
Each thread is also a run (``langgraph:<thread>`` of workflow ``langgraph:<graph>``) and each
checkpoint one of its attempts, of kind ``checkpoint``, so every front end lists threads next
to durable runs. ``journal.duckdb.owner._checkpoint_store`` keeps them in DuckDB;
``MemoryCheckpoints`` gives the same answers in memory.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from letitloop.journal._contract import (
    AttemptInfo,
    CheckpointRow,
    CheckpointWrite,
    Encoded,
    RunInfo,
)

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

PREFIX = "langgraph:"


def run_id_of(thread_id: str) -> str:
    return PREFIX + thread_id


# -- records ----------------------------------------------------------------------------------


def checkpoint_record(
    row: CheckpointRow, workflow: str, status: str, meta: dict[str, Any]
) -> dict[str, Any]:
    """The ``lgput`` record of one checkpoint (its writes: ``checkpoint_writes_record``)."""
    return {
        "k": "lgput",
        "run": run_id_of(row.thread_id),
        "thread": row.thread_id,
        "ns": row.ns,
        "id": row.checkpoint_id,
        "parent": row.parent_id,
        "wf": workflow,
        "status": status,
        "ctype": row.checkpoint[0],
        "cp": row.checkpoint[1],
        "mtype": row.metadata[0],
        "meta": row.metadata[1],
        "mjson": json.dumps(meta, default=str),
        "run_id": meta.get("run_id") if isinstance(meta.get("run_id"), str) else None,
        "ts": row.created or time.time(),
    }


def checkpoint_writes_record(
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    task_id: str,
    task_path: str,
    writes: Sequence[CheckpointWrite],
    status: str | None,
    error: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "k": "lgwrite",
        "run": run_id_of(thread_id),
        "thread": thread_id,
        "ns": ns,
        "id": checkpoint_id,
        "task": task_id,
        "path": task_path,
        "writes": [[w.idx, w.channel, w.value[0], w.value[1]] for w in writes],
        "status": status,
        "err": error,
        "ts": time.time(),
    }


def delete_record(
    thread_ids: Sequence[str] | None, run_ids: Sequence[str] | None, keep_latest: bool
) -> dict[str, Any]:
    one = thread_ids is not None and len(thread_ids) == 1 and run_ids is None
    return {
        "k": "lgdel",
        "run": run_id_of(thread_ids[0]) if one and thread_ids else "",
        "threads": list(thread_ids) if thread_ids is not None else None,
        "runs": list(run_ids) if run_ids is not None else None,
        "keep": "latest" if keep_latest else "none",
        "ts": time.time(),
    }


def copy_record(source: str, target: str) -> dict[str, Any]:
    return {
        "k": "lgcopy",
        "run": run_id_of(target),
        "src": source,
        "dst": target,
        "ts": time.time(),
    }


def status_of(put_status: str, channels: set[str]) -> str:
    """``suspended`` while an interrupt is pending, ``failed`` after an error write."""
    if "__interrupt__" in channels:
        return "suspended"
    if "__error__" in channels:
        return "failed"
    return put_status


def step_name(mjson: str, ns: str) -> str:
    meta = json.loads(mjson)
    name = f"{meta.get('source', 'checkpoint')} {meta.get('step', '')}".strip()
    return f"{name} [{ns}]" if ns else name


def matches(meta: dict[str, Any], flt: dict[str, Any]) -> bool:
    """A metadata filter: every key equal (compared as JSON, as the journal keeps metadata)."""
    wanted = json.loads(json.dumps(flt, default=str))
    return all(meta.get(k) == v for k, v in wanted.items())


def row(wire: Sequence[Any]) -> CheckpointRow:
    """A ``CheckpointRow`` from its wire form."""
    writes = [CheckpointWrite(w[0], w[1], w[2], (w[3], w[4]), w[5]) for w in wire[9]]
    return CheckpointRow(
        wire[0], wire[1], wire[2], wire[3], (wire[4], wire[5]), (wire[6], wire[7]), wire[8], writes
    )


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str)


# -- the in-memory twin -----------------------------------------------------------------------


class MemoryCheckpoints:
    """What ``MemoryJournal`` keeps of checkpoint records: the same answers as the tables."""

    def __init__(self) -> None:
        # (thread, ns, id) -> [parent, checkpoint, metadata, created, meta dict, run_id]
        self.cps: dict[tuple[str, str, str], list[Any]] = {}
        # (thread, ns, id) -> (task, idx) -> (channel, value, path)
        self.writes: dict[tuple[str, str, str], dict[tuple[str, int], tuple[str, Encoded, str]]]
        self.writes = {}
        self.threads: dict[str, dict[str, Any]] = {}  # run id -> what its RunInfo shows

    def apply(self, rec: dict[str, Any]) -> None:
        k = rec["k"]
        if k == "lgput":
            key = (rec["thread"], rec["ns"], rec["id"])
            meta = json.loads(rec["mjson"])
            self.cps[key] = [rec["parent"], (rec["ctype"], rec["cp"]), (rec["mtype"], rec["meta"])]
            self.cps[key] += [rec["ts"], meta, rec["run_id"], rec["status"]]
            t = self.threads.setdefault(
                rec["run"], {"wf": rec["wf"], "key": rec["thread"], "created": rec["ts"]}
            )
            t["updated"] = rec["ts"]
            if rec["ns"] == "":
                t["status"], t["error"] = rec["status"], None
            t.setdefault("status", rec["status"])
        elif k == "lgwrite":
            stored = self.writes.setdefault((rec["thread"], rec["ns"], rec["id"]), {})
            for idx, channel, vtype, value in rec["writes"]:
                if idx >= 0 and (rec["task"], idx) in stored:
                    continue
                stored[(rec["task"], idx)] = (channel, (vtype, value), rec["path"])
            found = self.threads.get(rec["run"])
            if found is not None and rec["status"] is not None:
                found.update(status=rec["status"], error=rec["err"], updated=rec["ts"])
        elif k == "lgcopy":
            for (thread, ns, cid), v in list(self.cps.items()):
                if thread == rec["src"]:
                    self.cps[(rec["dst"], ns, cid)] = list(v)
            for (thread, ns, cid), w in list(self.writes.items()):
                if thread == rec["src"]:
                    self.writes[(rec["dst"], ns, cid)] = dict(w)
            if (src := self.threads.get(run_id_of(rec["src"]))) is not None:
                self.threads[rec["run"]] = src | {"key": rec["dst"], "created": rec["ts"]}
        elif k == "lgdel":
            self._delete(rec)

    def _delete(self, rec: dict[str, Any]) -> None:
        if rec["runs"] is not None:
            doomed = [key for key, v in self.cps.items() if v[5] in rec["runs"]]
        elif rec["keep"] == "latest":
            latest: dict[tuple[str, str], str] = {}
            for thread, ns, cid in self.cps:
                latest[(thread, ns)] = max(cid, latest.get((thread, ns), ""))
            doomed = [
                key
                for key in self.cps
                if key[0] in rec["threads"] and key[2] != latest[(key[0], key[1])]
            ]
        else:
            doomed = [key for key in self.cps if key[0] in rec["threads"]]
        for key in doomed:
            del self.cps[key]
            self.writes.pop(key, None)
        for thread in {key[0] for key in doomed} | set(rec["threads"] or []):
            if not any(key[0] == thread for key in self.cps):
                self.threads.pop(run_id_of(thread), None)
                for key in [k for k in self.writes if k[0] == thread]:
                    del self.writes[key]

    def query(self, req: dict[str, Any]) -> list[CheckpointRow]:
        found = []
        for (thread, ns, cid), v in self.cps.items():
            if req.get("thread") not in (None, thread) or req.get("ns") not in (None, ns):
                continue
            if req.get("cid") not in (None, cid) or (req.get("before") or "\uffff") <= cid:
                continue
            if req.get("filter") and not matches(v[4], req["filter"]):
                continue
            stored = self.writes.get((thread, ns, cid), {})
            order = sorted(stored, key=lambda tk: (stored[tk][2], tk[0], tk[1]))
            writes = [
                CheckpointWrite(t, i, stored[(t, i)][0], stored[(t, i)][1], stored[(t, i)][2])
                for t, i in order
            ]
            found.append(CheckpointRow(thread, ns, cid, v[0], v[1], v[2], v[3], writes))
        found.sort(key=lambda r: (r.checkpoint_id, r.thread_id, r.ns), reverse=True)
        limit = req.get("limit")
        return found if limit is None else found[:limit]

    def _head_status(self, thread: str) -> str | None:
        heads = [key for key in self.cps if key[0] == thread and key[1] == ""]
        if not heads:
            return None
        head = max(heads, key=lambda key: key[2])
        channels = {w[0] for w in self.writes.get(head, {}).values()}
        return status_of(self.cps[head][6], channels)

    def attempts(self, thread: str) -> list[AttemptInfo]:
        """The thread's checkpoints as the attempts of its run, oldest first (as in DuckDB)."""
        mine = sorted((key for key in self.cps if key[0] == thread), key=lambda key: key[2])
        out = []
        for pos, key in enumerate(mine):
            v = self.cps[key]
            name = step_name(json.dumps(v[4]), key[1])
            fields = (pos, 1, "checkpoint", name, key[2], "completed", v[3], v[3], None)
            out.append(AttemptInfo(*fields, len(v[1][1]), None, None, None, None))
        return out

    def run_infos(self) -> list[RunInfo]:
        """The threads as runs of a listing."""
        out = []
        for run_id, t in self.threads.items():
            thread = t["key"]
            done = sum(1 for key in self.cps if key[0] == thread)
            status = self._head_status(thread) or t["status"]
            status = "interrupted" if status == "running" else status
            out.append(
                RunInfo(
                    run_id,
                    t["wf"],
                    thread,
                    status,
                    0,
                    1,
                    t["created"],
                    t["updated"],
                    done,
                    None,
                    None,
                    None,
                    t.get("error") if status == "failed" else None,
                )
            )
        return out
