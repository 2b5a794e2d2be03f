"""The conftest shim ``langgraph_suite.py`` adds to LangGraph's own test suite (not our tests).

Copied next to upstream's ``tests/conftest.py`` as ``tests/conftest_letitloop.py`` and
star-imported at its end, so these definitions replace upstream's two checkpointer fixtures.
Each fixture yields the one saver named by ``LIL_LG_SUITE_SAVER`` (``memory``, ``sqlite`` or
``letitloop``), built as upstream builds its own (upstream's helpers for the baselines, and
under ``LANGGRAPH_STRICT_MSGPACK`` upstream's strict serializer on every saver), so a test's id
is the same for every saver and the runs compare test by test. Only tests that take a
checkpointer are kept; each outcome goes to ``LIL_LG_SUITE_OUT`` as JSON lines.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest_checkpointer import (  # type: ignore[import-untyped]
    _apply_strict_msgpack,
    _checkpointer_memory,
    _checkpointer_sqlite,
    _checkpointer_sqlite_aio,
)

__all__ = [
    "async_checkpointer",
    "pytest_collection_modifyitems",
    "pytest_runtest_logreport",
    "sync_checkpointer",
]
SAVER = os.environ.get("LIL_LG_SUITE_SAVER", "letitloop")
JOURNAL = os.environ.get("LIL_LG_SUITE_JOURNAL", "duckdb")  # or a postgresql:// URL
OUT = os.environ.get("LIL_LG_SUITE_OUT")
FIXTURES = frozenset({"sync_checkpointer", "async_checkpointer"})


def _warm(saver: Any) -> None:
    """Open the journal before the test (start its owner, create the schema), as upstream's
    PostgreSQL fixtures run ``setup()``: timing tests then time the graph, not that."""
    saver.get_tuple({"configurable": {"thread_id": "lil-suite-warm-up"}})


def _letitloop(cls: type[Any]) -> tuple[Any, Callable[[], None]]:
    """Our saver on a fresh journal of its own (a DuckDB file and its owner, or a schema)."""
    if JOURNAL.startswith("postgresql://"):
        sep = "&" if "?" in JOURNAL else "?"  # not uuid4: some tests mock it, and count calls
        url = f"{JOURNAL}{sep}schema=lg_{os.urandom(6).hex()}"
        saver = cls(url)
        _apply_strict_msgpack(saver)
        _warm(saver)

        def close_pg() -> None:
            from letitloop.journal.postgres import _journal

            with _journal._journals_lock:
                journal = _journal._journals.pop(url, None)
            if journal is not None:
                journal.close()

        return saver, close_pg
    folder = Path(tempfile.mkdtemp(prefix="lil-lg-journal-"))
    saver = cls(folder / "journal.duckdb")
    _apply_strict_msgpack(saver)
    _warm(saver)

    def stop() -> None:
        from letitloop.journal.duckdb._client import stop_owner

        stop_owner(folder / "journal.duckdb")
        shutil.rmtree(folder, ignore_errors=True)

    return saver, stop


# upstream's parameter ids (its snapshots are named by them); outcomes are written without them
SYNC_ID = {"memory": "memory", "sqlite": "sqlite"}.get(SAVER, SAVER)
ASYNC_ID = {"memory": "memory", "sqlite": "sqlite_aio"}.get(SAVER, SAVER)


@pytest.fixture(params=[SYNC_ID])
def sync_checkpointer() -> Iterator[Any]:
    if SAVER == "memory":
        with _checkpointer_memory() as memory:
            yield memory
    elif SAVER == "sqlite":
        with _checkpointer_sqlite() as sqlite:
            yield sqlite
    else:
        from letitloop.adapters.langgraph import LetItLoopCheckpointSaver

        saver, close = _letitloop(LetItLoopCheckpointSaver)
        try:
            yield saver
        finally:
            close()


@pytest.fixture(params=[ASYNC_ID])
async def async_checkpointer() -> AsyncIterator[Any]:
    if SAVER == "memory":
        with _checkpointer_memory() as memory:
            yield memory
    elif SAVER == "sqlite":
        async with _checkpointer_sqlite_aio() as sqlite:
            yield sqlite
    else:
        from letitloop.adapters.langgraph import AsyncLetItLoopCheckpointSaver

        saver, close = _letitloop(AsyncLetItLoopCheckpointSaver)
        try:
            yield saver
        finally:
            close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep = [i for i in items if FIXTURES & set(getattr(i, "fixturenames", ()))]
    dropped = [i for i in items if not FIXTURES & set(getattr(i, "fixturenames", ()))]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    for item in keep:
        _common[item.nodeid] = _common_id(item)


def _common_id(item: pytest.Item) -> str:
    """The test's id without the checkpointer's parameter: the same for every saver."""
    base, spec = item.nodeid.partition("[")[0], getattr(item, "callspec", None)
    if spec is None:
        return base
    shown = []
    for name, value in sorted(spec.params.items()):
        if name in FIXTURES:
            continue
        plain = isinstance(value, str | int | float | bool | None)
        shown.append(f"{name}={value}" if plain else f"{name}#{spec.indices.get(name, 0)}")
    return f"{base}[{'-'.join(shown)}]" if shown else base


_common: dict[str, str] = {}
_outcomes: dict[str, str] = {}
_RANK = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 2}


def _outcome(report: pytest.TestReport) -> str:
    if report.failed:
        return "failed" if report.when == "call" else "error"
    if report.skipped:
        return "xfailed" if hasattr(report, "wasxfail") else "skipped"
    return "xpassed" if hasattr(report, "wasxfail") else "passed"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """One outcome per test, the worst of its phases; written after its teardown."""
    now, before = _outcome(report), _outcomes.get(report.nodeid)
    if before is None or _RANK[now] > _RANK[before]:
        _outcomes[report.nodeid] = now
    if report.when == "teardown" and OUT:
        with open(OUT, "a") as f:
            test = _common.get(report.nodeid, report.nodeid)
            row = {"test": test, "outcome": _outcomes[report.nodeid]}
            f.write(json.dumps(row))
            f.write("\n")
