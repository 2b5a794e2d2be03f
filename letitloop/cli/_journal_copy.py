"""``lil journal migrate`` and ``lil journal copy``: a journal's schema, and moving a journal
between backends (a DuckDB file and a PostgreSQL database, either way).

Both are thin: the copy is ``letitloop.journal._copy`` (backend-neutral, through the contract),
the migrations are the PostgreSQL backend's own list (``journal.postgres._schema``).
"""

from __future__ import annotations

import os
from typing import Any

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import journal_option, journal_spec, json_option, who


def is_postgres(spec: str) -> bool:
    return spec.startswith(("postgresql://", "postgres://"))


def _spec() -> str:
    """The journal this invocation names: --journal, $LIL_JOURNAL, or the one found from here."""
    from letitloop.journal._config import find_location

    return str(find_location(journal_spec()))


def _open(spec: str) -> Any:
    from letitloop.journal import open_journal

    return open_journal(spec if is_postgres(spec) else os.path.abspath(spec))


def migrate_postgres(url: str, *, check: bool, by: str) -> dict[str, Any]:
    """Bring a PostgreSQL journal's schema up to this letitloop's version (or, with ``check``,
    only say where it stands)."""
    import psycopg

    from letitloop.journal._config import env_float
    from letitloop.journal.postgres import _schema, _waits

    location = _schema.parse_location(url)
    limit = env_float("LIL_WRITE_TIMEOUT", 120.0)
    with psycopg.connect(location.dsn, autocommit=True) as conn:
        conn.execute(*_waits.settings(limit, env_float("LIL_LEASE_TTL", 30.0)))
        before = _schema.current_version(conn, location.schema)
        _schema.check_not_newer(before, location)
        try:
            after = before if check else _schema.migrate(conn, location, by=by)[1]
        except psycopg.Error as exc:
            if not _waits.is_timeout(exc):
                raise
            raise _waits.timed_out(exc, conn, url, location.schema, limit) from None
    return {
        "journal": url,
        "backend": "postgresql",
        "schema": location.schema,
        "version_before": before,
        "version": after,
        "latest": _schema.VERSION,
        "migrated": after != before,
    }


@click.command("migrate")
@click.option(
    "--check", is_flag=True, help="Only say whether the schema is behind (exit 1 if it is)."
)
@json_option
@journal_option
def migrate_cmd(check: bool, as_json: bool) -> None:
    """Create or upgrade the journal's schema to this letitloop's version.

    A PostgreSQL journal (--journal postgresql://...) is migrated in place, one versioned step
    at a time under a lock, so two processes never migrate at once; one newer than this
    letitloop is refused with the fix. A DuckDB journal is brought up to date by its owner
    whenever it opens the file: this command opens it. The first use of an empty database
    migrates by itself, so this command is for doing it ahead of time (with a role that may
    create tables) and for checking.

    \b
    Examples:
        lil journal migrate --journal postgresql://lil@db.internal/lil
        lil journal migrate --check --json
    """
    spec = _spec()
    if is_postgres(spec):
        info = migrate_postgres(spec, check=check, by=who())
    else:
        if not check:
            _open(spec).list_runs(limit=1)  # the owner migrates the file as it opens it
        info = {"journal": spec, "backend": "duckdb", "migrated": False, "behind": False}
    behind = is_postgres(spec) and info["version"] < info["latest"]
    if as_json:
        out.emit_json(info | {"behind": behind})
    elif not is_postgres(spec):
        out.say(f"{spec}: DuckDB journal; its owner keeps the file's schema up to date")
    elif info["migrated"]:
        out.say(
            f"{spec}: schema {info['schema']!r} migrated from version {info['version_before']} "
            f"to {info['version']}"
        )
    elif behind:
        out.say(
            f"{spec}: schema {info['schema']!r} is at version {info['version']}, this letitloop "
            f"has {info['latest']}: run `lil journal migrate`"
        )
    else:
        out.say(f"{spec}: schema {info['schema']!r} is up to date (version {info['version']})")
    if check and behind:
        raise SystemExit(1)


@click.command("copy")
@click.argument("source")
@click.argument("destination")
@click.option(
    "--into-non-empty",
    is_flag=True,
    help="Copy into a journal that already has records (records it has are skipped).",
)
@json_option
def copy_cmd(source: str, destination: str, into_non_empty: bool, as_json: bool) -> None:
    """Copy every run, output, approval, cache entry, splice proposal and LangGraph checkpoint
    of SOURCE into DESTINATION, each a DuckDB file or a postgresql:// URL.

    Records keep their times and authors, so the copy lists and shows the same as the source.
    Nothing may be executing in SOURCE; DESTINATION must be empty (a new file, database or
    ?schema=NAME). The source is left as it was.

    \b
    Examples:
        lil journal copy .letitloop/journal.duckdb postgresql://lil@db.internal/lil
        lil journal copy postgresql://lil@db.internal/lil?schema=team_a laptop.duckdb
    """
    from letitloop.journal._copy import CopyOptions, copy_journal

    if not is_postgres(source) and not os.path.exists(source):
        raise click.UsageError(f"source journal {source} does not exist")
    report = copy_journal(
        _open(source), _open(destination), CopyOptions(into_non_empty=into_non_empty)
    )
    info = {"source": source, "destination": destination} | report.as_dict()
    if as_json:
        out.emit_json(info)
        return
    out.say(
        f"copied {report.records} records from {source} to {destination}: {report.runs} runs, "
        f"{report.threads} LangGraph threads, {report.approvals} approvals, "
        f"{report.cache_entries} cache entries, {report.proposals} splice proposals"
    )
    for why, n in sorted(report.left_out.items()):
        out.say(out.text(f"left out {n} record(s): {why}", "yellow"))
    if report.key == "copied":
        out.say(
            "the source's key (for authenticated outputs) was copied beside it for the new "
            "journal; other machines that read it need it too (see docs/postgres.md)"
        )
