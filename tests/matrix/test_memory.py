"""The surface matrix on the in-memory journal: only the in-process surfaces apply, since no
other process can see a journal in this process's memory (the CLI, the lab's server, ``lil mcp``
and ``lil lsp`` are processes of their own). Its scenario is the DuckDB scenario's records,
copied through the contract: the kills happened on DuckDB, the memory journal holds what they
left, and it must read exactly as the DuckDB journal it was copied from."""

from __future__ import annotations

from tests.matrix import suite
from tests.matrix.build import Scenario
from tests.matrix.truth import read_truth, same


def test_memory_reads_as_the_duckdb_journal_it_was_copied_from(memory_scenario: Scenario) -> None:
    """Every run, view, marker in doubt, approval, proposal and task run as on DuckDB (a
    MemoryJournal keeps no outbox: it notifies nobody, so it lists no notification)."""
    on_duckdb = read_truth(memory_scenario.notes["source"].journal)
    on_memory = read_truth(memory_scenario.journal)
    assert on_duckdb.notices and on_memory.notices == []
    on_duckdb.notices = []
    same(
        "the memory journal",
        "the DuckDB journal it was copied from",
        on_duckdb.__dict__,
        on_memory.__dict__,
    )


async def test_in_process_surfaces_read_as_operate(memory_scenario: Scenario) -> None:
    await suite.in_process(memory_scenario, suite.BASE)


async def test_every_action_from_every_surface(memory_scenario: Scenario) -> None:
    await suite.actions(memory_scenario, None)


async def test_after_the_actions_every_surface_still_agrees(memory_scenario: Scenario) -> None:
    await suite.in_process(memory_scenario, suite.ACTED_IN_PROCESS)
