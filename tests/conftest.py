"""Shared fixtures: a fresh journal file per test, served by the real owner process."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Keys for authenticated pickles go to a throwaway directory, never the user's ~/.config.
os.environ.setdefault("LIL_KEY_DIR", tempfile.mkdtemp(prefix="lil-keys-"))
os.environ.setdefault("LIL_OWNER_IDLE", "60")


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    import json
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return set(json.loads(out.stdout))


def _kill_owner(path: Path) -> None:
    from letitloop.journal._config import JournalPaths
    from letitloop.journal.duckdb._client import stop_owner

    if stop_owner(path) is None:
        pid_file = JournalPaths(path).pid_file
        if pid_file.exists():
            import json

            try:
                os.kill(json.loads(pid_file.read_text())["pid"], signal.SIGKILL)
            except (ProcessLookupError, ValueError, KeyError):
                pass


@pytest.fixture
def journal_path(tmp_path: Path) -> Iterator[Path]:
    """A journal file of its own; its owner is stopped after the test."""
    path = tmp_path / "journal" / "journal.duckdb"
    yield path
    _kill_owner(path)


@pytest.fixture
def journal(journal_path: Path):  # type: ignore[no-untyped-def]
    """The real owner-backed journal for ``journal_path``."""
    from letitloop.journal.duckdb._client import open_journal

    return open_journal(journal_path)


@pytest.fixture
def memory_journal():  # type: ignore[no-untyped-def]
    from letitloop.journal._memory import MemoryJournal

    return MemoryJournal()


# --- PostgreSQL: one throwaway cluster per test session, a fresh database per test -------------


@pytest.fixture(params=["memory", "duckdb", "postgres"])
def backend_journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """The same test on each backend: the in-memory twin, a DuckDB file behind its real owner
    process, and a fresh database on the session's real PostgreSQL server."""
    from letitloop.journal import MemoryJournal, open_journal

    if request.param == "memory":
        yield MemoryJournal()
    elif request.param == "duckdb":
        path = tmp_path / "journal" / "journal.duckdb"
        yield open_journal(path)
        _kill_owner(path)
    else:
        yield open_journal(request.getfixturevalue("pg_dsn"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """The session's PostgreSQL server (``tests/pg_cluster.py``): a cluster started by initdb +
    pg_ctl in a temp dir (as the ``postgres`` user under root), or ``LIL_TEST_PG_DSN``. Its admin
    DSN is exported as ``LIL_TEST_PG_DSN`` for subprocesses. Missing binaries fail every test
    that needs the server, with the install command; nothing is skipped."""
    from tests.pg_cluster import PgUnavailable, open_server

    try:
        server = open_server()
    except PgUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    before = os.environ.get("LIL_TEST_PG_DSN")
    os.environ["LIL_TEST_PG_DSN"] = server.dsn
    try:
        yield server
    finally:
        if before is None:
            os.environ.pop("LIL_TEST_PG_DSN", None)
        else:
            os.environ["LIL_TEST_PG_DSN"] = before
        server.close()


@pytest.fixture
def pg_dsn(pg_server: Any) -> Iterator[str]:
    """A ``postgresql://`` URL of a fresh, empty database of its own, dropped after the test
    (with FORCE, so connections a killed worker left behind do not keep it)."""
    from tests.pg_cluster import with_database

    name = pg_server.create_database()
    dsn = with_database(pg_server.dsn, name)
    yield dsn
    _close_pg_journals(dsn)
    try:
        pg_server.drop_database(name)
    except Exception:
        if not pg_server.managed or pg_server.running():
            raise
        # a test that stopped the cluster and did not start it again: the next one needs it
        pg_server.start()
        pg_server.drop_database(name)


def _close_pg_journals(dsn: str) -> None:
    """Close the process-wide journals a test opened on ``dsn`` (any ?schema=), so no heartbeat
    or follower thread outlives its database."""
    import sys

    module = sys.modules.get("letitloop.journal.postgres._journal")
    if module is None:
        return
    with module._journals_lock:
        mine = [url for url in module._journals if url.startswith(dsn)]
        journals = [module._journals.pop(url) for url in mine]
    for journal in journals:
        try:
            journal.close()
        except Exception:
            pass
