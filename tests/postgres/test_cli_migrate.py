"""``lil journal migrate`` on a real PostgreSQL server: creates the schema on an empty database,
is a no-op when up to date, says where a journal stands with ``--check``, places a journal in a
named schema, and refuses a journal newer than this letitloop with the fix."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import psycopg

from letitloop.journal.postgres._schema import VERSION
from tests.helpers import run_lil


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    """Its output read as JSON, whatever its exit code (``--check`` exits 1 when behind)."""
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def _tables(dsn: str, schema: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema]
        ).fetchall()
    return {r[0] for r in rows}


def test_migrate_creates_then_keeps_the_schema(pg_dsn: str) -> None:
    check = run_lil("journal", "migrate", "--journal", pg_dsn, "--check", "--json")
    assert check.returncode == 1  # an empty database is behind
    assert _json(check)["version"] == 0 and _json(check)["behind"] is True
    assert _tables(pg_dsn, "letitloop") == set()  # --check changed nothing

    done = run_lil("journal", "migrate", "--journal", pg_dsn, "--json")
    assert done.returncode == 0, done.stderr
    info = _json(done)
    assert (info["version_before"], info["version"], info["migrated"]) == (0, VERSION, True)
    assert {"runs", "steps", "events", "approvals", "lil_migrations"} <= _tables(
        pg_dsn, "letitloop"
    )

    again = run_lil("journal", "migrate", "--journal", pg_dsn)
    assert again.returncode == 0, again.stderr
    assert f"up to date (version {VERSION})" in again.stdout
    assert run_lil("journal", "migrate", "--journal", pg_dsn, "--check").returncode == 0


def test_migrate_into_a_named_schema_leaves_the_default_alone(pg_dsn: str) -> None:
    url = pg_dsn + "?schema=team_a"
    done = run_lil("journal", "migrate", "--journal", url, "--json")
    assert done.returncode == 0, done.stderr
    assert _json(done)["schema"] == "team_a"
    assert "runs" in _tables(pg_dsn, "team_a")
    assert _tables(pg_dsn, "letitloop") == set()

    from letitloop import durable, step

    @durable(journal=url, name="migrate.wf", run_id="one")
    def wf() -> int:
        return step("s", lambda: 41) + 1

    assert wf() == 42
    status = run_lil(
        "journal", "status", "--journal", url
    )  # a DuckDB-only command says so, no traceback
    assert status.returncode == 1 and "PostgreSQL URL" in status.stderr, status.stderr
    with psycopg.connect(pg_dsn) as conn:
        found = conn.execute("SELECT run_id, status FROM team_a.runs").fetchall()
    assert found == [("migrate.wf:one", "completed")]


def test_migrate_refuses_a_journal_newer_than_this_letitloop(pg_dsn: str) -> None:
    assert run_lil("journal", "migrate", "--journal", pg_dsn).returncode == 0
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO letitloop.lil_migrations(version, applied_by) VALUES (%s, 'future')",
            [VERSION + 1],
        )
    done = run_lil("journal", "migrate", "--journal", pg_dsn)
    assert done.returncode == 1
    assert f"schema version {VERSION + 1}" in done.stderr
    assert "fix: upgrade letitloop" in done.stderr
    with psycopg.connect(pg_dsn) as conn:
        versions = conn.execute("SELECT version FROM letitloop.lil_migrations").fetchall()
    assert sorted(v[0] for v in versions) == [*range(1, VERSION + 1), VERSION + 1]
