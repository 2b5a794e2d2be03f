"""LangGraph's own conformance suite (every base and extended capability) against both savers
on a PostgreSQL journal, reached by its URL as a user would pass it."""

from __future__ import annotations

from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)

from letitloop.adapters.langgraph import AsyncLetItLoopCheckpointSaver
from tests.adapters.test_langgraph_conformance import SyncDriven, _assert_all_pass, _conformance


async def test_async_saver_passes_every_capability_on_postgres(pg_dsn: str) -> None:
    def async_saver() -> AsyncLetItLoopCheckpointSaver:
        return AsyncLetItLoopCheckpointSaver(pg_dsn)

    report = await _conformance(async_saver)
    _assert_all_pass(report)
    assert len(report.results) == len(BASE_CAPABILITIES | EXTENDED_CAPABILITIES) == 8
    assert async_saver().journal.location.startswith("postgresql://")


async def test_sync_saver_passes_every_capability_on_postgres(pg_dsn: str) -> None:
    def sync_saver() -> SyncDriven:
        return SyncDriven(pg_dsn)

    report = await _conformance(sync_saver)
    _assert_all_pass(report)
    assert len(report.results) == 8
