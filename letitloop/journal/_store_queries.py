"""Reads the two SQL stores (the DuckDB owner, PostgreSQL) phrase alike, written once.

Each store keeps its own statements where the dialects differ (DuckDB's ``unnest($1)`` join,
PostgreSQL's lateral aggregate of a checkpoint's writes); what is the same up to the placeholder
(``?`` for DuckDB, ``%s`` for PostgreSQL) lives here, so both stores filter and fail alike.
"""

from __future__ import annotations

from typing import Any

from letitloop.errors import JournalError

# a checkpoint listing's columns, newest first; ``meta`` (the JSON the filter reads) comes last
CHECKPOINTS_SELECT = (
    "SELECT thread_id, ns, checkpoint_id, parent_id, ctype, checkpoint, mtype, metadata, "
    "created, meta FROM lg_checkpoints WHERE {where} ORDER BY checkpoint_id DESC, thread_id, ns"
)


def checkpoint_where(req: dict[str, Any], mark: str) -> tuple[list[str], list[Any]]:
    """The conditions (ANDed) and parameters of a checkpoint listing request (``thread``,
    ``ns``, ``cid``, ``before``), with the store's placeholder ``mark``."""
    where, params = ["TRUE"], []
    for col, key in (("thread_id", "thread"), ("ns", "ns"), ("checkpoint_id", "cid")):
        if req.get(key) is not None:
            where.append(f"{col} = {mark}")
            params.append(req[key])
    if req.get("before") is not None:
        where.append(f"checkpoint_id < {mark}")
        params.append(req["before"])
    return where, params


def output_select(mark: str) -> str:
    """The statement reading one attempt's encoded output (codec, bytes)."""
    return (
        f"SELECT codec, output FROM steps WHERE run_id = {mark} AND epoch = {mark} AND "
        f"position = {mark} AND attempt = {mark}"
    )


def output_of(
    row: tuple[Any, ...] | None, run_id: str, epoch: int, position: int, attempt: int
) -> tuple[str, Any]:
    """An attempt's (codec, output) from its row, or the error that names what has none."""
    if row is None or row[0] is None:
        raise JournalError(
            f"no output for run {run_id} epoch {epoch} position {position} attempt {attempt}",
            run_id=run_id,
            position=position,
        )
    return row[0], row[1]
