"""Issue 29, point 3: a zombie fenced on PostgreSQL is told what really happened to its run."""

from __future__ import annotations

import time

import pytest

from letitloop.errors import LeaseLostError, RunLockedError
from letitloop.journal.postgres._journal import PgJournal


def test_a_zombie_is_told_the_run_was_taken_over_and_completed(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIL_LEASE_TTL", "0.5")
    old, new = PgJournal(pg_dsn), PgJournal(pg_dsn)
    try:
        old.open_run(run_id="z", workflow="w", key="z")
        assert old._heartbeat is not None
        old._heartbeat.close()  # a frozen process sends no heartbeat
        with pytest.raises(RunLockedError):
            new.open_run(run_id="z", workflow="w", key="z")
        state = new.open_run(run_id="z", workflow="w", key="z", lock_timeout=10)
        assert state.attempt == 2
        step = {"k": "step", "run": "z", "epoch": 0, "pos": 0, "att": 1, "kind": "step"}
        step |= {"name": "s", "fp": "f", "ts": time.time()}
        done = {"k": "done", "run": "z", "epoch": 0, "codec": "json", "out": b"1"}
        new.append([step, done | {"ts": time.time()}])
        new.release_run("z")  # the new holder finished the run and let it go
        assert new.get_run("z").run.status == "completed"

        for _ in range(2):  # the first write that is fenced, and every later one
            with pytest.raises(LeaseLostError) as err:
                old.append([step])
            said = err.value.message
            assert "nobody" not in said, said
            assert "another process took the run over" in said, said
            assert "the run has been completed there since" in said, said
            assert err.value.fix and err.value.fix.startswith("nothing to redo"), err.value.fix
    finally:
        old.close()
        new.close()
