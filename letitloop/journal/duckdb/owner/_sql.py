"""``lil journal sql``: one plain SELECT over the journal's tables, checked and bounded.

Run on the owner's query thread (``_queries``) with a cursor of its own.
"""

from __future__ import annotations

import threading
from typing import Any

import duckdb

from letitloop.errors import ConfigError
from letitloop.journal.duckdb.owner._schema import memory_limit

SQL_ROWS = 10_000  # rows ``lil journal sql`` returns at most (it says when it stopped)
SQL_BYTES = 32 << 20  # text and bytes it returns at most
SQL_SECONDS = 30.0  # a query running longer is interrupted


def sql(query: str, cur: duckdb.DuckDBPyConnection, limit: int = SQL_ROWS) -> dict[str, Any]:
    """Run one plain SELECT over the journal's tables, for ``lil journal sql``, on ``cur``
    (the query thread's cursor: ``self.db`` is the database thread's): checked with DuckDB's
    own parser, inside a read-only transaction, with no file system access (the connection
    has none), within a deadline and a size limit (``truncated`` says so)."""
    check_select(cur, query)
    timer = threading.Timer(SQL_SECONDS, cur.interrupt)
    cur.execute("BEGIN TRANSACTION READ ONLY")
    timer.start()
    try:
        cur.execute(query)
        columns = [d[0] for d in cur.description or []]
        rows: list[list[Any]] = []
        size, truncated = 0, False
        while batch := cur.fetchmany(1000):
            for row in batch:
                values = [_plain(v) for v in row]
                size += sum(len(v) for v in values if isinstance(v, (str, bytes))) + 8
                if len(rows) >= limit or size > SQL_BYTES:
                    truncated = True
                    break
                rows.append(values)
            if truncated:
                break
    except duckdb.InterruptException:
        raise ConfigError(
            f"the query ran longer than {SQL_SECONDS:.0f} s and was stopped",
            fix="narrow it (WHERE, LIMIT) or aggregate",
        ) from None
    except duckdb.OutOfMemoryException:
        raise _out_of_memory() from None
    except duckdb.Error as exc:
        raise ConfigError(
            f"the query failed: {exc}", fix="check the SQL; tables: " + _tables(cur)
        ) from None
    finally:
        timer.cancel()
        cur.execute("ROLLBACK")
    return {"columns": columns, "rows": rows, "truncated": truncated, "limit": limit}


def _out_of_memory() -> ConfigError:
    """A query (or its parse) outgrew the owner's memory limit: what to narrow or raise."""
    return ConfigError(
        f"the query needs more memory than the journal owner allows "
        f"(LIL_OWNER_MEMORY_LIMIT = {memory_limit()})",
        fix="narrow it (WHERE, LIMIT), aggregate less, or start the owner with a larger "
        "LIL_OWNER_MEMORY_LIMIT",
    )


def check_select(db: duckdb.DuckDBPyConnection, query: str) -> None:
    """Refuse anything but one plain SELECT over the journal's own tables and views.

    DuckDB's parser decides the statement type: EXPLAIN (``EXPLAIN ANALYZE DELETE`` executes
    the DELETE), PRAGMA, CALL, SET, COPY and every write are refused whatever their spelling."""
    fix = "write one SELECT, e.g. SELECT status, count(*) FROM runs GROUP BY 1"
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.OutOfMemoryException:
        raise _out_of_memory() from None
    except duckdb.Error as exc:
        raise ConfigError(f"the query does not parse: {exc}", fix=fix) from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(s.type.name for s in statements) or "nothing"
        raise ConfigError(
            f"only a single SELECT (plain, read-only) may run through the journal owner, got "
            f"{kinds}",
            fix=fix,
        )
    try:
        used = {t.split(".")[-1] for t in db.cursor().get_table_names(query)}
    except duckdb.Error:  # its binder misses some forms (JOIN ... USING): execution will tell
        used = set()
    unknown = used - set(_tables(db).split(", "))
    if unknown:
        raise ConfigError(
            f"the query reads {', '.join(sorted(unknown))}, which the journal does not have",
            fix="tables: " + _tables(db),
        )


def _tables(db: duckdb.DuckDBPyConnection) -> str:
    rows = db.cursor().execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' UNION "
        "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
        "ORDER BY 1"
    )
    return ", ".join(r[0] for r in rows.fetchall())


def _plain(value: Any) -> Any:
    """SQL results as msgpack-friendly values."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    return str(value)
