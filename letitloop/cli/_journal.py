"""``lil journal``: the journal file and its owner process (status, stop, sql; doctor lives in
``cli._doctor``)."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from letitloop.cli import _output as out
from letitloop.cli._doctor import doctor_cmd
from letitloop.cli._journal_copy import copy_cmd, migrate_cmd
from letitloop.cli._shared import (
    journal_option,
    journal_path,
    json_option,
    open_owner_journal,
    owner_answers,
)


@click.group()
def journal() -> None:
    """The journal file and its owner process."""


journal.add_command(doctor_cmd)
journal.add_command(migrate_cmd)
journal.add_command(copy_cmd)


def _pid_file(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _file_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size if path.exists() else 0


def _offline(path: Path) -> dict[str, Any]:
    """What can be said about a journal without its owner (and without starting one)."""
    from letitloop.journal import JournalPaths

    paths = JournalPaths(path)
    pid = _pid_file(paths.pid_file)
    note = "no owner is running"
    if pid and isinstance(pid.get("pid"), int):
        alive = _alive(pid["pid"])
        note += f"; pid file names pid {pid['pid']}, " + (
            "which is alive but does not answer on the socket" if alive else "which is gone"
        )
    return {
        "journal": str(path),
        "exists": path.exists(),
        "db_bytes": _file_bytes(path),
        "log_bytes": _file_bytes(paths.log_dir),
        "owner": None,
        "note": note,
    }


@journal.command("status")
@json_option
@journal_option
def status_cmd(as_json: bool) -> None:
    """Show the journal's path, its owner and its size. Never starts an owner.

    \b
    Example:
        lil journal status --json
    """
    from letitloop.journal import JournalPaths

    path = journal_path()
    if not owner_answers(JournalPaths(path).socket):
        info = _offline(path)
        if as_json:
            out.emit_json(info)
            return
        rows: list[tuple[str, Any]] = [
            ("journal", str(path)),
            ("owner", out.text(info["note"], "yellow")),
        ]
        if info["exists"]:
            rows.append(
                ("on disk", f"{out.size(info['db_bytes'])} + log {out.size(info['log_bytes'])}")
            )
        else:
            rows.append(("on disk", "no journal file yet"))
        rows.append(("hint", "any other lil command (e.g. `lil runs list`) starts the owner"))
        out.say(out.kv_table(rows))
        return
    stats = open_owner_journal().stats()
    stats["other_clients"] = max(int(stats.get("clients", 1)) - 1, 0)
    stats["fold_lag_bytes"] = int(stats["log_end"]) - int(stats["folded_lsn"])
    if as_json:
        out.emit_json({"journal": str(path), "owner": stats})
        return
    lag = stats["fold_lag_bytes"]
    out.say(
        out.kv_table(
            [
                ("journal", str(path)),
                ("journal id", str(stats.get("journal_id", "-"))),
                (
                    "owner",
                    f"pid {stats['pid']}, letitloop {stats.get('version')}, up "
                    f"{out.duration(float(stats.get('uptime_s', 0)))}, "
                    f"{stats['other_clients']} other client(s)",
                ),
                (
                    "contents",
                    f"{stats['runs']} runs, {stats['attempts']} attempts, {stats['events']} events",
                ),
                ("output bytes", out.size(int(stats["output_bytes"]))),
                (
                    "log",
                    f"end {stats['log_end']}, folded into DuckDB up to {stats['folded_lsn']}"
                    + (" (all folded)" if lag == 0 else f" ({lag} bytes to fold)"),
                ),
                (
                    "since start",
                    f"{stats.get('acked', 0)} records acknowledged, {stats.get('fsyncs', 0)} "
                    f"fsyncs, recovery {stats.get('recovery_ms', '-')} ms",
                ),
            ]
        )
    )


@journal.command("stop")
@json_option
@journal_option
def stop_cmd(as_json: bool) -> None:
    """Stop the journal's owner (it folds its log, checkpoints DuckDB and exits).

    The next command or workflow call starts a new owner.

    \b
    Example:
        lil journal stop
    """
    from letitloop.journal.duckdb._client import stop_owner

    path = journal_path()
    pid = stop_owner(path)
    if as_json:
        out.emit_json({"journal": str(path), "stopped": pid is not None, "pid": pid})
    elif pid is None:
        out.say(f"no owner was running for {path}")
    else:
        out.say(f"stopped owner pid {pid} of {path}")


@journal.command("schema")
@json_option
@journal_option
def schema_cmd(as_json: bool) -> None:
    """List every table and view of the journal with its columns and their types (what
    ``lil journal sql`` can query).

    \b
    Example:
        lil journal schema
    """
    result = open_owner_journal().sql(SCHEMA_QUERY)
    tables: dict[str, dict[str, Any]] = {}
    for name, kind, column, dtype in result["rows"]:
        item = tables.setdefault(
            name, {"name": name, "kind": _KINDS.get(kind, kind), "columns": []}
        )
        item["columns"].append({"name": column, "type": dtype})
    if as_json:
        out.emit_json(list(tables.values()))
        return
    for t in tables.values():
        out.say(out.text(f"{t['name']} ({t['kind']})", "bold"))
        out.say(out.text("  " + ", ".join(f"{c['name']} {c['type']}" for c in t["columns"])))


SCHEMA_QUERY = (
    "SELECT c.table_name, t.table_type, c.column_name, c.data_type "
    "FROM information_schema.columns c JOIN information_schema.tables t "
    "ON c.table_schema = t.table_schema AND c.table_name = t.table_name "
    "WHERE c.table_schema = 'main' AND c.table_name NOT IN ('meta', 'fold_state') "
    "ORDER BY t.table_type, c.table_name, c.ordinal_position"
)
_KINDS = {"BASE TABLE": "table", "VIEW": "view", "LOCAL TEMPORARY": "temporary table"}


@journal.command(
    "sql", epilog="Every table and view, with its columns and their types: `lil journal schema`."
)
@click.argument("query")
@json_option
@journal_option
def sql_cmd(query: str, as_json: bool) -> None:
    """Run one read-only SELECT against the journal's tables, through its owner.

    Tables: runs, steps, events, approvals, proposals, cache, quarantine (see
    `letitloop/journal/duckdb/owner/_schema.py`); typed views for analytics: step_facts, run_facts
    (docs/analytics.md). Only a plain SELECT runs (no EXPLAIN, PRAGMA or
    writes), in a read-only transaction without file system access; at most 10,000 rows or
    32 MiB come back, and the output says when it was cut.

    \b
    Example:
        lil journal sql "SELECT status, count(*) FROM runs GROUP BY 1"
    """
    result = open_owner_journal().sql(query)
    if as_json:
        out.emit_json(result)
        return
    table = out.make_table(*[str(c) for c in result["columns"]])
    for row in result["rows"]:
        cells = zip(result["columns"], row, strict=True)
        table.add_row(*[out.text(_cell(v, c)) for c, v in cells])
    out.say(table)
    n = len(result["rows"])
    cut = " (truncated: the result has more; narrow the query)" if result.get("truncated") else ""
    out.say(out.text(f"({n} row{'s' if n != 1 else ''}{cut})", "dim"))


def _cell(value: Any, column: str = "") -> str:
    """One value as people read it: times local (an epoch-seconds column of the journal, or a
    TIMESTAMP, e.g. of the ``v_*`` views), bytes by their size; ``--json`` keeps raw values."""
    from letitloop.operate import local_time

    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    epoch = isinstance(value, (int, float)) and not isinstance(value, bool)
    if epoch and str(column).lower() in TIME_COLUMNS and 1e8 < value < 1e11:
        return local_time(value)
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        return local_time(datetime.fromisoformat(value).timestamp())
    return out.one_line(value, 80)


# the journal's columns holding epoch seconds (see `lil journal schema`)
TIME_COLUMNS = frozenset(
    "created updated started ended ts deadline decided_at expires set_aside try_started "
    "last_active".split()
)
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d(:?\d\d)?)?")


@journal.command("export")
@click.option(
    "--parquet",
    "directory",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write steps.parquet and runs.parquet into (created if missing).",
)
@click.option("--since", default=None, help="Only what started after: 7d, 12h, or a date.")
@json_option
@journal_option
def export_cmd(directory: Path, since: str | None, as_json: bool) -> None:
    """Write the analytics views (step_facts, run_facts; see docs/analytics.md) as Parquet
    files that DuckDB, pandas and Polars read; DuckDB and PostgreSQL journals alike.

    \b
    Example:
        lil journal export --parquet exports/ --since 30d
        duckdb -c "SELECT model, sum(cost_usd) FROM 'exports/steps.parquet' GROUP BY 1"
    """
    from letitloop.cli._shared import open_cli_journal
    from letitloop.journal import export_parquet, parse_since

    counts = export_parquet(open_cli_journal(), directory, parse_since(since))
    files = {stem: str(directory / f"{stem}.parquet") for stem in counts}
    if as_json:
        out.emit_json({"files": files, "rows": counts})
        return
    for stem, n in counts.items():
        out.say(f"{files[stem]}: {n} row{'s' if n != 1 else ''}")
