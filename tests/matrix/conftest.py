"""One scenario per backend and test module, built once (real processes, real SIGKILLs) and
read and acted on by every surface; its processes and servers are stopped after the module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import _close_pg_journals, _kill_owner
from tests.matrix.build import Scenario, build, on_memory


def _duckdb(root: Path) -> tuple[Scenario, Path]:
    path = root / "project" / ".letitloop" / "journal.duckdb"
    return build("duckdb", root / "project", str(path)), path


@pytest.fixture(scope="module")
def duckdb_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    scenario, path = _duckdb(tmp_path_factory.mktemp("duckdb"))
    try:
        yield scenario
    finally:
        _kill_owner(path)
        assert scenario.receiver is not None
        scenario.receiver.close()


@pytest.fixture(scope="module")
def postgres_scenario(
    tmp_path_factory: pytest.TempPathFactory, pg_server: Any
) -> Iterator[Scenario]:
    from tests.pg_cluster import with_database

    name = pg_server.create_database()
    dsn = with_database(pg_server.dsn, name)
    scenario = build("postgres", tmp_path_factory.mktemp("postgres") / "project", dsn)
    try:
        yield scenario
    finally:
        _close_pg_journals(dsn)
        assert scenario.receiver is not None
        scenario.receiver.close()
        pg_server.drop_database(name)


@pytest.fixture(scope="module")
def memory_scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """The DuckDB scenario's records copied into a MemoryJournal, its DuckDB owner stopped."""
    source, path = _duckdb(tmp_path_factory.mktemp("memory"))
    try:
        yield on_memory(source)
    finally:
        _kill_owner(path)
        assert source.receiver is not None
        source.receiver.close()


def _rest(scenario: Scenario, state: Path) -> Iterator[Any]:
    from tests.matrix.rest import rest_server

    with rest_server(scenario, state) as server:
        yield server


@pytest.fixture(scope="module")
def duckdb_rest(
    duckdb_scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """The lab's server on the DuckDB scenario, for the module."""
    yield from _rest(duckdb_scenario, tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="module")
def postgres_rest(
    postgres_scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """The lab's server on the PostgreSQL scenario, for the module."""
    yield from _rest(postgres_scenario, tmp_path_factory.mktemp("lab"))
