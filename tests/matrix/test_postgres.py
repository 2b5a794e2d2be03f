"""The surface matrix on a PostgreSQL journal (a fresh database on the session's real
server): one scenario, built once for the module by real processes, read and acted on by every
surface (``suite``)."""

from __future__ import annotations

from typing import Any

from tests.matrix import suite
from tests.matrix.build import Scenario


async def test_in_process_surfaces_read_as_operate(postgres_scenario: Scenario) -> None:
    await suite.in_process(postgres_scenario, suite.BASE)


async def test_cli_lab_and_mcp_read_as_operate(
    postgres_scenario: Scenario, postgres_rest: Any
) -> None:
    await suite.processes(postgres_scenario, postgres_rest, suite.BASE)


async def test_every_action_from_every_surface(
    postgres_scenario: Scenario, postgres_rest: Any
) -> None:
    await suite.actions(postgres_scenario, postgres_rest)


async def test_after_the_actions_every_surface_still_agrees(
    postgres_scenario: Scenario, postgres_rest: Any
) -> None:
    await suite.in_process(postgres_scenario, suite.ACTED)
    await suite.processes(postgres_scenario, postgres_rest, suite.ACTED)
    print(suite.report())
