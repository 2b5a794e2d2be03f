"""LangGraph's own conformance suite against both savers, on a real owner-backed journal.

``langgraph-checkpoint-conformance`` drives the async methods; the sync saver runs through a
shim whose async methods call the sync ones directly, so its own code is what gets checked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)
from langgraph.checkpoint.conformance.report import CapabilityReport

from letitloop.adapters.langgraph import AsyncLetItLoopCheckpointSaver, LetItLoopCheckpointSaver
from letitloop.journal._memory import MemoryJournal


class SyncDriven(LetItLoopCheckpointSaver):
    """The sync saver with async methods that call its sync methods on the caller's thread."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, **kw: Any) -> AsyncIterator[Any]:
        for item in self.list(config, **kw):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, versions)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source: str, target: str) -> None:
        self.copy_thread(source, target)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


async def _conformance(make: Any) -> CapabilityReport:
    @checkpointer_test(name=make.__name__)
    async def factory() -> AsyncIterator[Any]:
        yield make()

    return await validate(factory)


def _assert_all_pass(report: CapabilityReport) -> None:
    failures = {cap: r.failures for cap, r in report.results.items() if r.passed is not True}
    assert not failures, failures
    caps = {c.value for c in BASE_CAPABILITIES | EXTENDED_CAPABILITIES}
    assert set(report.results) == caps
    assert all(r.detected and r.tests_passed > 0 for r in report.results.values())


async def test_async_saver_passes_every_capability(journal_path: Path) -> None:
    def async_saver() -> AsyncLetItLoopCheckpointSaver:
        return AsyncLetItLoopCheckpointSaver(journal_path)

    _assert_all_pass(await _conformance(async_saver))


async def test_sync_saver_passes_every_capability(journal_path: Path) -> None:
    def sync_saver() -> SyncDriven:
        return SyncDriven(journal_path)

    _assert_all_pass(await _conformance(sync_saver))


async def test_memory_journal_twin_passes_every_capability() -> None:
    journal = MemoryJournal()

    def memory_saver() -> AsyncLetItLoopCheckpointSaver:
        return AsyncLetItLoopCheckpointSaver(journal)

    _assert_all_pass(await _conformance(memory_saver))
