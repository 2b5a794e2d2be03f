"""Compare-and-swap on the blackboard between two real processes, on DuckDB and PostgreSQL.

Two processes increment one counter on a run's board, each read-then-write with ``expect=``
the version read and a pause between, so they do collide: every collision is a
``BoardConflictError`` in the loser, and no increment is lost (the counter ends at the sum,
its versions one per increment)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from letitloop import durable
from letitloop.memory import blackboard
from tests.conftest import _kill_owner
from tests.crash.crash_helpers import Worker

SCRIPT = Path(__file__).resolve().parent / "counter_worker.py"
N = 25


@pytest.fixture
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "duckdb":
        path = tmp_path / "j" / "journal.duckdb"
        yield str(path)
        _kill_owner(path)
    else:
        yield request.getfixturevalue("pg_dsn")


@pytest.mark.parametrize("location", ["duckdb", "postgres"], indirect=True)
def test_two_processes_compare_and_swap_one_key(location: str, tmp_path: Path) -> None:
    @durable(journal=location, run_id="shared", name="team")
    def team() -> int:
        return blackboard().put("counter", 0).version

    assert team() == 1
    workers = [
        Worker(str(SCRIPT), location, "team:shared", N, stderr_path=tmp_path / f"w{i}.err")
        for i in range(2)
    ]
    try:
        rcs = [w.finish(120) for w in workers]
        assert rcs == [0, 0], [w.diagnostics() for w in workers]
    finally:
        for w in workers:
            w.kill()
    conflicts = [int(w.snapshot()[-1].split()[1]) for w in workers]
    assert sum(conflicts) > 0  # they did collide; each collision was refused, not lost
    history = blackboard("team:shared", journal=location).history("counter")
    assert [e.value for e in history] == list(range(2 * N + 1))
    assert [e.version for e in history] == list(range(1, 2 * N + 2))
