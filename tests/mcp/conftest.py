"""A scripted journal per test, on DuckDB (its real owner) or PostgreSQL (a fresh database)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import _kill_owner
from tests.mcp.mcp_helpers import ALL_ACTS, make_project, script_journal


@pytest.fixture(params=["duckdb", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The journal's location: a DuckDB file (its owner stopped after the test) or a fresh
    PostgreSQL database."""
    if request.param == "duckdb":
        path = tmp_path / "project" / ".letitloop" / "journal.duckdb"
        yield str(path)
        _kill_owner(path)
    else:
        yield str(request.getfixturevalue("pg_dsn"))


@pytest.fixture
def scripted(backend: str, tmp_path: Path) -> Path:
    """A project whose journal the scenario wrote, every act tool allowed."""
    project = make_project(tmp_path / "project", backend, ALL_ACTS)
    script_journal(project)
    return project


@pytest.fixture
def duck_project(tmp_path: Path) -> Iterator[Path]:
    """A scripted project on DuckDB alone (for the transport and hostile-input tests)."""
    path = tmp_path / "project" / ".letitloop" / "journal.duckdb"
    project = make_project(tmp_path / "project", str(path), ALL_ACTS)
    script_journal(project)
    yield project
    _kill_owner(path)
