"""The surface matrix on a DuckDB journal behind its real owner process: one scenario, built
once for the module by real processes, read and acted on by every surface (``suite``)."""

from __future__ import annotations

from typing import Any

from tests.matrix import suite
from tests.matrix.build import Scenario


async def test_in_process_surfaces_read_as_operate(duckdb_scenario: Scenario) -> None:
    await suite.in_process(duckdb_scenario, suite.BASE)


async def test_cli_lab_and_mcp_read_as_operate(duckdb_scenario: Scenario, duckdb_rest: Any) -> None:
    await suite.processes(duckdb_scenario, duckdb_rest, suite.BASE)


async def test_every_action_from_every_surface(duckdb_scenario: Scenario, duckdb_rest: Any) -> None:
    await suite.actions(duckdb_scenario, duckdb_rest)


async def test_after_the_actions_every_surface_still_agrees(
    duckdb_scenario: Scenario, duckdb_rest: Any
) -> None:
    await suite.in_process(duckdb_scenario, suite.ACTED)
    await suite.processes(duckdb_scenario, duckdb_rest, suite.ACTED)
    print(suite.report())
