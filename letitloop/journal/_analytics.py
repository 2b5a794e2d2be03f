"""Analytics over every run: typed journal views, the recipes people run on them, and a summary.

Both backends have the same two views (DuckDB creates them on open, PostgreSQL in a migration):

    step_facts  one row per step attempt: run_id, workflow, name, kind, position, epoch,
                attempt, status, started/ended (TIMESTAMP WITH TIME ZONE), duration_s,
                cost_usd, cost_micros (exact: sums of it add up the same in any order),
                tokens_in, tokens_out, model, cache ('hit'/'miss'), cached,
                saved_usd, replayed (a later try of the run reused its result), error_type
    run_facts   one row per run: run_id, workflow, run_key, epoch, status, tries, parent,
                created/updated (TIMESTAMP WITH TIME ZONE), duration_s, attempts,
                failed_attempts, cost_usd, tokens_in, tokens_out, cached_steps, saved_usd

The recipes are plain SQL that both DuckDB and PostgreSQL run unchanged; ``lil journal sql``
runs them too. ``summary`` gathers what ``lil report``, ``letitloop.report()`` and lil-tui's
analytics screen show, so the three front ends only draw it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from letitloop.errors import ConfigError

# the columns of the views, with the type each has on both backends
STEP_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "text"),
    ("workflow", "text"),
    ("name", "text"),
    ("kind", "text"),
    ("position", "integer"),
    ("epoch", "integer"),
    ("attempt", "integer"),
    ("status", "text"),
    ("started", "timestamptz"),
    ("ended", "timestamptz"),
    ("duration_s", "double precision"),
    ("cost_usd", "double precision"),
    ("cost_micros", "bigint"),
    ("tokens_in", "bigint"),
    ("tokens_out", "bigint"),
    ("model", "text"),
    ("cache", "text"),
    ("cached", "boolean"),
    ("saved_usd", "double precision"),
    ("replayed", "boolean"),
    ("error_type", "text"),
)
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "text"),
    ("workflow", "text"),
    ("run_key", "text"),
    ("epoch", "integer"),
    ("status", "text"),
    ("tries", "integer"),
    ("parent", "text"),
    ("created", "timestamptz"),
    ("updated", "timestamptz"),
    ("duration_s", "double precision"),
    ("attempts", "bigint"),
    ("failed_attempts", "bigint"),
    ("cost_usd", "double precision"),
    ("tokens_in", "bigint"),
    ("tokens_out", "bigint"),
    ("cached_steps", "bigint"),
    ("saved_usd", "double precision"),
)

# the views, version 1: DuckDB creates ``VIEWS`` on every open, PostgreSQL's migration 4 ran
# ``VIEWS_1``; a change to them is a ``VIEWS_2`` here and a new migration there
VIEWS_1 = """
CREATE OR REPLACE VIEW step_facts AS
SELECT s.run_id, CAST(r.workflow AS text) AS workflow, s.name, s.kind, s.position, s.epoch,
  s.attempt, s.status, to_timestamp(s.started) AS started, to_timestamp(s.ended) AS ended,
  CAST(s.ended - s.started AS double precision) AS duration_s,
  CAST(s.cost_micros AS double precision) / 1000000 AS cost_usd,
  CAST(s.cost_micros AS bigint) AS cost_micros,
  CAST(s.tokens_in AS bigint) AS tokens_in, CAST(s.tokens_out AS bigint) AS tokens_out,
  s.model, s.cache, coalesce(s.cache = 'hit', false) AS cached,
  CAST(coalesce(s.saved_micros, 0) AS double precision) / 1000000 AS saved_usd,
  coalesce(s.status = 'completed' AND s.ended < t.last_try, false) AS replayed,
  CAST(s.error ->> 'type' AS text) AS error_type
FROM steps s
LEFT JOIN runs r ON r.run_id = s.run_id
LEFT JOIN (SELECT run_id, epoch, max(ts) AS last_try FROM events WHERE kind = 'run'
           GROUP BY run_id, epoch) t ON t.run_id = s.run_id AND t.epoch = s.epoch;
CREATE OR REPLACE VIEW run_facts AS
SELECT r.run_id, r.workflow, r.run_key, r.epoch, r.status, r.tries, r.parent,
  to_timestamp(r.created) AS created, to_timestamp(r.updated) AS updated,
  CAST(r.updated - r.created AS double precision) AS duration_s,
  coalesce(a.attempts, 0) AS attempts, coalesce(a.failed, 0) AS failed_attempts,
  a.cost_usd, a.tokens_in, a.tokens_out, coalesce(a.cached, 0) AS cached_steps,
  coalesce(a.saved_usd, 0) AS saved_usd
FROM runs r
LEFT JOIN (SELECT run_id, count(*) AS attempts,
             count(*) FILTER (WHERE status = 'failed') AS failed,
             CAST(sum(cost_micros) AS double precision) / 1000000 AS cost_usd,
             CAST(sum(tokens_in) AS bigint) AS tokens_in,
             CAST(sum(tokens_out) AS bigint) AS tokens_out,
             count(*) FILTER (WHERE cache = 'hit') AS cached,
             CAST(coalesce(sum(saved_micros), 0) AS double precision) / 1000000 AS saved_usd
           FROM steps GROUP BY run_id) a ON a.run_id = r.run_id;
"""
VIEWS = VIEWS_1


@dataclass(frozen=True)
class Recipe:
    """One question and the SQL that answers it (on either backend, through ``select``)."""

    name: str
    title: str
    sql: str


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "cost_per_model_per_day",
            "Cost per model per day",
            "SELECT CAST(date_trunc('day', started) AS date) AS day, model, count(*) AS calls, "
            "CAST(sum(cost_micros) AS double precision) / 1000000 AS cost_usd, "
            "sum(tokens_in) AS tokens_in, "
            "sum(tokens_out) AS tokens_out "
            "FROM step_facts WHERE model IS NOT NULL "
            "GROUP BY 1, 2 ORDER BY 1, 4 DESC, 2",
        ),
        Recipe(
            "latency_per_step",
            "p50/p95 latency per step name (work done: cache hits left out)",
            "SELECT name, count(*) AS attempts, "
            "percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_s) AS p50_s, "
            "percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_s) AS p95_s, "
            "max(duration_s) AS max_s "
            "FROM step_facts WHERE duration_s IS NOT NULL AND NOT cached "
            "GROUP BY name ORDER BY p95_s DESC, name",
        ),
        Recipe(
            "failure_rates",
            "Failure and retry rates per step name",
            "SELECT name, CAST(sum(tries) AS bigint) AS attempts, "
            "CAST(sum(failed) AS bigint) AS failed, "
            "CAST(sum(tries) - count(*) AS bigint) AS retries, "
            "CAST(sum(failed) AS double precision) / sum(tries) AS failure_rate, "
            "CAST(sum(tries) - count(*) AS double precision) / count(*) AS retry_rate "
            "FROM (SELECT name, run_id, epoch, position, count(*) AS tries, "
            "count(*) FILTER (WHERE status = 'failed') AS failed "
            "FROM step_facts GROUP BY name, run_id, epoch, position) per_step "
            "GROUP BY name ORDER BY failure_rate DESC, name",
        ),
        Recipe(
            "cache_savings",
            "Cache hits and the money they saved, per step name",
            "SELECT name, count(*) FILTER (WHERE cached) AS hits, "
            "count(*) FILTER (WHERE cache = 'miss') AS misses, "
            "CAST(count(*) FILTER (WHERE cached) AS double precision) / count(*) AS hit_rate, "
            "sum(saved_usd) AS saved_usd "
            "FROM step_facts WHERE cache IS NOT NULL GROUP BY name ORDER BY saved_usd DESC, name",
        ),
        Recipe(
            "cost_per_workflow_and_model",
            "Cost per workflow and model",
            "SELECT workflow, model, count(*) AS calls, "
            "CAST(sum(cost_micros) AS double precision) / 1000000 AS cost_usd, "
            "sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out "
            "FROM step_facts WHERE cost_usd IS NOT NULL "
            "GROUP BY 1, 2 ORDER BY 4 DESC, 1, 2",
        ),
        Recipe(
            "runs_per_workflow",
            "Runs, failures and cost per workflow",
            "SELECT workflow, count(*) AS runs, "
            "count(*) FILTER (WHERE status = 'failed') AS failed, "
            "CAST(count(*) FILTER (WHERE status = 'failed') AS double precision) / count(*) "
            "AS failure_rate, sum(cost_usd) AS cost_usd, sum(saved_usd) AS saved_usd "
            "FROM run_facts GROUP BY 1 ORDER BY 2 DESC, 1",
        ),
        Recipe(
            "daily",
            "Steps, failures and cost per day",
            "SELECT CAST(date_trunc('day', started) AS date) AS day, count(*) AS attempts, "
            "count(*) FILTER (WHERE status = 'failed') AS failed, "
            "CAST(coalesce(sum(cost_micros), 0) AS double precision) / 1000000 AS cost_usd "
            "FROM step_facts WHERE started IS NOT NULL GROUP BY 1 ORDER BY 1",
        ),
    )
}


@dataclass(frozen=True)
class Table:
    """A query's answer: column names and rows of plain values."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def since_clause(since: float | None) -> str:
    """SQL that narrows both views to what started (steps) or changed (runs) after ``since``:
    common table expressions named like the views, put before a recipe's SELECT."""
    if since is None:
        return ""
    if not math.isfinite(since):
        raise ConfigError(f"--since must be a time, got {since!r}", fix="e.g. --since 7d")
    at = f"to_timestamp({float(since)!r})"
    return (
        f"WITH step_facts AS (SELECT * FROM step_facts WHERE started >= {at}), "
        f"run_facts AS (SELECT * FROM run_facts WHERE updated >= {at}) "
    )


def select(journal: Any, sql: str) -> Table:
    """Run one read-only SELECT on the journal: through the owner for a DuckDB file (``lil
    journal sql``'s path, at most its row limit), on a read-only transaction for PostgreSQL."""
    if hasattr(journal, "sql"):  # the DuckDB owner's client
        result = journal.sql(sql)
        rows = tuple(tuple(r) for r in result["rows"])
        if result.get("truncated"):
            raise ConfigError(
                f"the query's answer has more than {result.get('limit')} rows",
                fix="aggregate or add a LIMIT (the export pages through the views by itself)",
            )
        return Table(tuple(result["columns"]), rows)
    if hasattr(journal, "_run") and hasattr(journal, "where"):  # PostgreSQL
        return _pg_select(journal, sql)
    raise ConfigError(
        f"analytics need a DuckDB or PostgreSQL journal, not {type(journal).__name__}",
        fix="open the journal with letitloop.journal.open_journal(PATH_OR_URL)",
    )


def _pg_select(journal: Any, sql: str) -> Table:
    result: Table = journal._run(lambda conn: _pg_rows(conn, sql, 30.0, None)[0])
    return result


def _pg_rows(conn: Any, sql: str, seconds: float, max_rows: int | None) -> tuple[Table, bool]:
    """One statement in a read-only transaction with a statement timeout, sent with the
    extended protocol, so exactly one statement runs (``SELECT 1; COMMIT; DELETE ...`` is
    refused, never executed); its rows (the first ``max_rows``) and whether it had more."""
    with conn.transaction():
        cur = conn.cursor()
        cur.execute("SET TRANSACTION READ ONLY")
        cur.execute(f"SET LOCAL statement_timeout = '{int(seconds * 1000)}ms'")
        cur.execute(sql.encode(), prepare=True)  # extended protocol: one statement
        columns = tuple(d.name for d in cur.description or ())
        if not cur.description:
            got = []
        elif max_rows is None:
            got = cur.fetchall()
        else:
            got = cur.fetchmany(max_rows + 1)
        rows = tuple(tuple(_plain(v) for v in row) for row in got)
    more = max_rows is not None and len(rows) > max_rows
    return Table(columns, rows if max_rows is None else rows[:max_rows]), more


def read_query(journal: Any, sql: str, max_rows: int) -> tuple[Table, bool]:
    """One read-only statement anyone may send (an agent, a person): its first ``max_rows``
    rows, and whether it had more. On a DuckDB journal through the owner's ``sql`` (a plain
    SELECT in a read-only transaction without file access); on PostgreSQL on a connection of its
    own, closed afterwards (a session lock taken by the query dies with it), in a read-only
    transaction with a statement timeout, sent with the extended protocol so that exactly one
    statement runs (``SELECT 1; COMMIT; DELETE ...`` is refused, never executed)."""
    if hasattr(journal, "sql"):  # the DuckDB owner's client
        result = journal.sql(sql)
        rows = tuple(tuple(r) for r in result["rows"])
        more = bool(result.get("truncated")) or len(rows) > max_rows
        return Table(tuple(result["columns"]), rows[:max_rows]), more
    if hasattr(journal, "_fresh") and hasattr(journal, "where"):  # PostgreSQL
        conn = journal._fresh()
        try:
            return _pg_rows(conn, sql, QUERY_SECONDS, max_rows)
        except Exception as exc:
            if type(exc).__module__.split(".")[0] != "psycopg":
                raise
            raise ConfigError(
                f"the query failed: {str(exc).strip()[:500]}",
                fix="send one read-only SELECT (the views step_facts and run_facts, the tables "
                "runs, steps, events, approvals, proposals)",
            ) from None
        finally:
            conn.close()
    raise ConfigError(
        f"SQL needs a DuckDB or PostgreSQL journal, not {type(journal).__name__}",
        fix="open the journal with letitloop.journal.open_journal(PATH_OR_URL)",
    )


QUERY_SECONDS = 10.0  # how long a read_query may run on PostgreSQL


def _plain(value: Any) -> Any:
    """Values as both backends hand them over: numbers, text, booleans, dates as ISO text."""
    from decimal import Decimal

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return float(value)
    return str(value)


def recipe(journal: Any, name: str, since: float | None = None) -> Table:
    """The answer of one of ``RECIPES`` (optionally only what happened after ``since``)."""
    found = RECIPES.get(name)
    if found is None:
        raise ConfigError(f"no analytics recipe {name!r}", fix="one of: " + ", ".join(RECIPES))
    return select(journal, since_clause(since) + found.sql)


# -- the summary the report front ends draw ---------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """What ``lil report``, ``letitloop.report()`` and lil-tui's analytics screen show."""

    location: str
    since: float | None
    runs: int
    failed_runs: int
    attempts: int
    failed_attempts: int
    cost_usd: float
    saved_usd: float
    tokens: int
    by_workflow_model: list[dict[str, Any]] = field(default_factory=list)
    slowest: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    workflows: list[dict[str, Any]] = field(default_factory=list)
    days: list[str] = field(default_factory=list)  # ISO dates, every day from first to last
    daily_cost: list[float] = field(default_factory=list)
    daily_attempts: list[int] = field(default_factory=list)
    daily_failed: list[int] = field(default_factory=list)


TOTALS_SQL = (
    "SELECT (SELECT count(*) FROM run_facts), "
    "(SELECT count(*) FROM run_facts WHERE status = 'failed'), "
    "(SELECT count(*) FROM step_facts), "
    "(SELECT count(*) FROM step_facts WHERE status = 'failed'), "
    "(SELECT CAST(coalesce(sum(cost_micros), 0) AS double precision) / 1000000 "
    "FROM step_facts), "
    "(SELECT coalesce(sum(saved_usd), 0) FROM step_facts), "
    "(SELECT coalesce(sum(tokens_in), 0) + coalesce(sum(tokens_out), 0) FROM step_facts)"
)
MAX_DAYS = 60  # the sparklines' length at most (the last days)


def summary(journal: Any, since: float | None = None, top: int = 10) -> Summary:
    """Everything a report shows, in a few queries (each a recipe or the totals)."""
    totals = select(journal, since_clause(since) + TOTALS_SQL).rows[0]
    runs, failed_runs, attempts, failed_attempts, cost, saved, tokens = totals
    days, cost_s, att_s, fail_s = _daily(recipe(journal, "daily", since).dicts())
    return Summary(
        location=str(getattr(journal, "location", "")),
        since=since,
        runs=int(runs),
        failed_runs=int(failed_runs),
        attempts=int(attempts),
        failed_attempts=int(failed_attempts),
        cost_usd=float(cost or 0),
        saved_usd=float(saved or 0),
        tokens=int(tokens or 0),
        by_workflow_model=recipe(journal, "cost_per_workflow_and_model", since).dicts()[:top],
        slowest=recipe(journal, "latency_per_step", since).dicts()[:top],
        failures=[
            r
            for r in recipe(journal, "failure_rates", since).dicts()
            if r["failed"] or r["retries"]
        ][:top],
        workflows=recipe(journal, "runs_per_workflow", since).dicts()[:top],
        days=days,
        daily_cost=cost_s,
        daily_attempts=att_s,
        daily_failed=fail_s,
    )


def _daily(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[float], list[int], list[int]]:
    """The per-day rows as series with a value for every day (days without steps are zeros)."""
    from datetime import date, timedelta

    if not rows:
        return [], [], [], []
    by_day = {str(r["day"])[:10]: r for r in rows}
    first, last = date.fromisoformat(min(by_day)), date.fromisoformat(max(by_day))
    first = max(first, last - timedelta(days=MAX_DAYS - 1))
    days = [(first + timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]
    empty: dict[str, Any] = {"cost_usd": 0.0, "attempts": 0, "failed": 0}
    picked = [by_day.get(d, empty) for d in days]
    return (
        days,
        [float(r["cost_usd"] or 0) for r in picked],
        [int(r["attempts"]) for r in picked],
        [int(r["failed"]) for r in picked],
    )


def parse_since(text: str | None, now: float | None = None) -> float | None:
    """``--since``: a duration back from now (``30m``, ``12h``, ``7d``, ``2w``) or an ISO date
    or time (``2026-11-01``, ``2026-11-01T08:00``; local time unless it names a zone)."""
    import re
    from datetime import datetime

    if text is None or not text.strip():
        return None
    now = time.time() if now is None else now
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text.lower())
    if match:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}[match.group(2)]
        return now - float(match.group(1)) * unit
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ConfigError(
            f"--since {text!r} is neither a duration nor a date",
            fix="write a duration back from now (30m, 12h, 7d, 2w) or a date (2026-11-01)",
        ) from None


# -- export -----------------------------------------------------------------------------------

EXPORTS = (  # file stem, view, columns, its key (pages are read in its order), time column
    ("steps", "step_facts", STEP_COLUMNS, ("run_id", "epoch", "position", "attempt"), "started"),
    ("runs", "run_facts", RUN_COLUMNS, ("run_id",), "updated"),
)
PAGE = 10_000  # rows read per query: as many as the DuckDB owner answers (SQL_ROWS)


def export_parquet(journal: Any, directory: Path, since: float | None = None) -> dict[str, int]:
    """Write ``steps.parquet`` and ``runs.parquet`` (the two views, typed) into ``directory``;
    returns the rows written per file. Rows are read page by page in key order, and DuckDB
    (in memory, in this process: the owner has no file access) writes the files, each to a
    temporary name renamed when complete."""
    import duckdb

    directory.mkdir(parents=True, exist_ok=True)
    db = duckdb.connect()
    counts: dict[str, int] = {}
    try:
        for stem, view, columns, keys, time_col in EXPORTS:
            db.execute(f"CREATE TABLE {stem} ({', '.join(f'{n} {t}' for n, t in columns)})")
            insert = f"INSERT INTO {stem} SELECT " + ", ".join(
                f"CAST(unnest(${i + 1}) AS {t})" for i, (_, t) in enumerate(columns)
            )
            names = [n for n, _ in columns]
            for page in _pages(journal, view, names, keys, time_col, since):
                db.execute(insert, [list(col) for col in zip(*page.rows, strict=True)])
            target = directory / f"{stem}.parquet"
            partial = directory / f".{stem}.parquet.partial"
            db.execute(f"COPY {stem} TO {_literal(str(partial))} (FORMAT parquet)")
            partial.replace(target)
            row = db.execute(f"SELECT count(*) FROM {stem}").fetchone()
            counts[stem] = int(row[0]) if row else 0
    finally:
        db.close()
    return counts


def _pages(
    journal: Any,
    view: str,
    names: list[str],
    keys: tuple[str, ...],
    time_col: str,
    since: float | None,
) -> Iterator[Table]:
    """The view's rows in key order, ``PAGE`` at a time (each page starts after the last key
    of the one before, so rows written meanwhile are neither skipped nor repeated)."""
    after: tuple[Any, ...] | None = None
    while True:
        where = [f"{time_col} >= to_timestamp({float(since)!r})"] if since is not None else []
        if after is not None:
            values = ", ".join(_literal(v) if isinstance(v, str) else str(int(v)) for v in after)
            where.append(f"({', '.join(keys)}) > ({values})")
        sql = (
            f"SELECT {', '.join(names)} FROM {view}"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + f" ORDER BY {', '.join(keys)} LIMIT {PAGE}"
        )
        page = select(journal, sql)
        if page.rows:
            yield page
        if len(page.rows) < PAGE:
            return
        last = page.rows[-1]
        after = tuple(last[names.index(k)] for k in keys)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
