"""The DuckDB store behind the owner: one connection, used by the database thread only.

Only the owner process imports this module (and duckdb). The store is made of its folding
(``_folds``) and its reads (``_store_reads``); the schema is ``_schema``'s and ``lil journal sql``
is ``_sql``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from letitloop.journal._records import Record, validate
from letitloop.journal.duckdb.owner import _schema, _sql
from letitloop.journal.duckdb.owner._checkpoint_store import CheckpointStore
from letitloop.journal.duckdb.owner._folds import Bad, Folds
from letitloop.journal.duckdb.owner._store_reads import StoreReads

check_select = _sql.check_select


class Store(Folds, StoreReads):
    """The owner's DuckDB connection and everything it does with it."""

    def __init__(self, path: Path) -> None:
        self.db = _schema.connect(path)
        self.lg = CheckpointStore(self.db)  # graph checkpoints: their tables are added on open
        self.journal_id: str = self.meta("journal_id") or ""
        self.schema_version = _schema.SCHEMA_VERSION
        row = self.db.execute("SELECT folded_lsn FROM fold_state").fetchone()
        self.folded_lsn: int = row[0] if row else 0
        self.quarantined = 0  # records set aside since this owner started

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def known_runs(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT run_id FROM runs").fetchall()}

    def decode(self, items: Sequence[tuple[int, bytes]]) -> list[tuple[int, Record | Bad]]:
        """Log frames as records; one that does not unpack or validate (written by another
        version, or damaged) becomes a ``Bad`` for the fold to quarantine, never a crash."""
        import msgpack

        out: list[tuple[int, Record | Bad]] = []
        for lsn, payload in items:
            rec: Any = None
            try:
                rec = msgpack.unpackb(payload, raw=False)
                out.append((lsn, validate(rec)))
            except Exception as exc:  # any reason at all: the record is set aside
                rec = rec if isinstance(rec, dict) else None
                out.append((lsn, Bad(payload, f"{type(exc).__name__}: {exc}", rec)))
        return out

    def sql(
        self, query: str, cur: duckdb.DuckDBPyConnection, limit: int = _sql.SQL_ROWS
    ) -> dict[str, Any]:
        """``lil journal sql`` on the query thread's cursor ``cur`` (see ``_sql.sql``)."""
        return _sql.sql(query, cur, limit)

    def close(self) -> None:
        self.db.execute("CHECKPOINT")
        self.db.close()
