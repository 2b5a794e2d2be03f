"""Where a PostgreSQL journal lives and how its schema evolves: URLs, schemas, migrations, roles.

Real server (the session's throwaway cluster), a fresh database per test.
"""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from letitloop.errors import ConfigError, JournalError, JournalVersionError
from letitloop.journal import open_journal
from letitloop.journal._config import find_journal, find_location
from letitloop.journal.postgres import _schema
from letitloop.journal.postgres._journal import PgJournal
from tests.conftest import modules_after
from tests.pg_cluster import with_user


def _versions(url: str, schema: str = "letitloop") -> list[int]:
    loc = _schema.parse_location(url)
    with psycopg.connect(loc.dsn, autocommit=True) as conn:
        rows = conn.execute(f'SELECT version FROM "{schema}".lil_migrations ORDER BY 1')
        return [r[0] for r in rows]


def test_first_use_of_an_empty_database_migrates_once_even_when_racing(pg_dsn: str) -> None:
    opened: list[PgJournal] = []
    errors: list[BaseException] = []

    def first_use() -> None:
        try:
            opened.append(PgJournal(pg_dsn))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=first_use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(opened) == 4
    assert _versions(pg_dsn) == list(range(1, _schema.VERSION + 1))
    assert len({j.journal_id for j in opened}) == 1  # one journal, one id
    for j in opened:
        j.close()


def test_an_older_journal_is_upgraded_on_open(pg_dsn: str) -> None:
    """A journal at schema version 1 (exactly what version 1 created: its migration alone) is
    brought through every later migration when it is opened, and the fenced hot path works."""
    loc = _schema.parse_location(pg_dsn)
    with psycopg.connect(loc.dsn, autocommit=True) as conn, conn.transaction():
        conn.execute('CREATE SCHEMA "letitloop"')
        conn.execute(
            'CREATE TABLE "letitloop".lil_migrations(version int PRIMARY KEY, '
            "applied timestamptz NOT NULL DEFAULT now(), applied_by text)"
        )
        conn.execute('SET LOCAL search_path TO "letitloop"')
        conn.execute(_schema.MIGRATIONS[0].encode())
        conn.execute("INSERT INTO lil_migrations(version, applied_by) VALUES (1, 'v1')")
    assert _versions(pg_dsn) == [1]
    journal = PgJournal(pg_dsn)
    assert _versions(pg_dsn) == list(range(1, _schema.VERSION + 1))
    journal.open_run(run_id="wf:1", workflow="wf", key="1")
    step = {"k": "step", "run": "wf:1", "epoch": 0, "pos": 0, "att": 1, "kind": "step"}
    journal.append([step | {"name": "s", "fp": "f", "ts": 1.0}])  # the fenced hot path
    assert [e.kind for e in journal.events()] == ["run", "step"]
    journal.close()


def test_a_journal_newer_than_the_code_is_refused_with_the_fix(pg_dsn: str) -> None:
    PgJournal(pg_dsn).close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO letitloop.lil_migrations(version) VALUES (99)")
    with pytest.raises(JournalVersionError, match="schema version 99") as err:
        PgJournal(pg_dsn)
    assert err.value.fix is not None and "upgrade letitloop" in err.value.fix
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # and nothing was touched
        assert conn.execute("SELECT count(*) FROM letitloop.runs").fetchone() == (0,)


def test_named_schemas_hold_separate_journals(pg_dsn: str) -> None:
    sep = "&" if "?" in pg_dsn else "?"
    a, b = PgJournal(f"{pg_dsn}{sep}schema=team_a"), PgJournal(f"{pg_dsn}{sep}schema=team_b")
    a.open_run(run_id="wf:1", workflow="wf", key="1")
    assert [r.run_id for r in a.list_runs()] == ["wf:1"]
    assert b.list_runs() == [] and a.journal_id != b.journal_id
    every = list(range(1, _schema.VERSION + 1))
    assert _versions(pg_dsn, "team_a") == _versions(pg_dsn, "team_b") == every
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('letitloop.runs')").fetchone() == (None,)
    with pytest.raises(ConfigError, match="not a plain PostgreSQL name"):
        PgJournal(f"{pg_dsn}{sep}schema=Bad-Name")
    a.close()
    b.close()


def test_urls_are_found_like_paths_and_open_the_postgres_backend(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.letitloop]\njournal = "{pg_dsn}"\n')
    monkeypatch.delenv("LIL_JOURNAL", raising=False)
    assert find_location(cwd=tmp_path) == pg_dsn
    with pytest.raises(ConfigError, match="is a PostgreSQL URL"):
        find_journal(cwd=tmp_path)
    monkeypatch.setenv("LIL_JOURNAL", pg_dsn)
    journal = open_journal()
    assert isinstance(journal, PgJournal) and open_journal(pg_dsn) is journal
    with pytest.raises(ConfigError, match="cannot use"):
        find_location("sqlite:///tmp/x.db")
    journal.close()


def test_the_driver_is_imported_only_when_a_postgres_journal_opens(pg_dsn: str) -> None:
    assert "psycopg" not in modules_after("import letitloop\nfrom letitloop import durable, step")
    loaded = modules_after(f"from letitloop import open_journal\nopen_journal({pg_dsn!r})")
    assert "psycopg" in loaded and "duckdb" not in loaded


def test_a_read_only_role_lists_but_cannot_decide(pg_dsn: str) -> None:
    writer = PgJournal(pg_dsn)
    writer.open_run(run_id="wf:1", workflow="wf", key="1")
    writer.release_run("wf:1")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS lil_reader")
        conn.execute("CREATE ROLE lil_reader LOGIN")
        conn.execute("GRANT USAGE ON SCHEMA letitloop TO lil_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA letitloop TO lil_reader")
    try:
        reader = PgJournal(with_user(pg_dsn, "lil_reader"))
        assert [r.run_id for r in reader.list_runs()] == ["wf:1"]
        assert reader.get_run("wf:1").run.status == "interrupted"
        with pytest.raises(JournalError, match="may not do this") as err:
            reader.cancel_run("wf:1", "mallory")
        assert err.value.fix is not None and "read-only" in err.value.fix
        assert writer.get_run("wf:1").run.status == "interrupted"  # nothing was written
        reader.close()
    finally:
        writer.close()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("DROP OWNED BY lil_reader")
            conn.execute("DROP ROLE lil_reader")
