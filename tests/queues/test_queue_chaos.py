"""The issue's bar for queued runs, on real ``lil worker`` processes, on a DuckDB journal (one
machine: the owner is the queue) and on PostgreSQL: workers SIGKILLed at random while they drain
the queue (and the whole fleet once), a SIGTERM drain under load, a SIGSTOPped worker fenced.

The CI size is 200 runs and 20 kills; ``benchmarks/queue_chaos.py`` runs the same with 1,000.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.queues.chaos import chaos


@pytest.fixture(params=["duckdb", "postgres"])
def journal_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "duckdb":
        (tmp_path / ".letitloop").mkdir()
        return str(tmp_path / ".letitloop" / "journal.duckdb")
    return request.getfixturevalue("pg_dsn")


@pytest.mark.timeout(600)
def test_workers_killed_at_random_lose_nothing(journal_spec: str, tmp_path: Path) -> None:
    from letitloop.journal import open_journal

    journal = open_journal(journal_spec)
    # steps of 0.15 s: the fleet must still be draining at the 20th kill (a fast owner
    # drained 200 runs of 0.02 s steps after 17 of them)
    r = chaos(tmp_path, journal_spec, journal, runs=200, kills=20, seconds=0.15)
    out = r.pop("output")
    assert r["left"] == 0 and r["completed"] == 200, (r, out())
    assert r["kills"] >= 20, r
    assert r["unexplained_reexecutions"] == [], r  # a step re-ran only when its worker died
    assert r["duplicate_effects"] == 0 and r["effects"] == 200, r
    assert r["max_total"] <= 6 and r["max_per_pid"] <= 2, r  # concurrency=6, per_worker=2
    print(
        f"\n{journal_spec.split(':')[0]}: 200 runs, {r['kills']} kills, {r['elapsed']:.1f} s, "
        f"{r['reexecutions']} steps run again (each after its worker's kill), "
        f"max {r['max_total']} at once, {r['max_per_pid']} per worker"
    )


def _wait(pred: Any, timeout: float) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.timeout(300)
def test_a_sigterm_drain_under_load_reexecutes_nothing(journal_spec: str, tmp_path: Path) -> None:
    import signal

    from letitloop.journal import open_journal
    from tests.queues.chaos import Fleet, counting_server, enqueue_all, unfinished, write_flow

    journal = open_journal(journal_spec)
    write_flow(tmp_path)
    with counting_server() as (url, counts):
        fleet = Fleet(tmp_path, journal_spec, url, ttl=2.0)
        try:
            enqueue_all(tmp_path, fleet.env, 24, 0.25)
            draining = fleet.start(grace=60)
            fleet.start(grace=60)
            assert _wait(lambda: any(p == draining.pid for p in counts.now), 60), fleet.output()
            draining.send_signal(signal.SIGTERM)  # under load: it holds runs mid-step
            assert draining.wait(90) == 0, fleet.output()
            assert _wait(lambda: unfinished(journal) == 0, 120), fleet.output()
        finally:
            fleet.kill_all()
        reruns = {k: v for k, v in counts.executions.items() if len(v) > 1}
        assert reruns == {}, (reruns, fleet.output())
        assert len(counts.executions) == 48 and sum(counts.effects.values()) == 24
        drained_log = fleet.logs[0].read_text()
        assert "completed chaosflow.job:" in drained_log and "released" not in drained_log


@pytest.mark.timeout(300)
def test_a_sigstopped_worker_past_its_ttl_is_fenced_when_it_wakes(
    journal_spec: str, tmp_path: Path
) -> None:
    import signal

    from letitloop.journal import open_journal
    from tests.queues.chaos import Fleet, counting_server, enqueue_all, unfinished, write_flow

    journal = open_journal(journal_spec)
    write_flow(tmp_path)
    with counting_server() as (url, counts):
        fleet = Fleet(tmp_path, journal_spec, url, ttl=1.0)
        try:
            enqueue_all(tmp_path, fleet.env, 1, 3.0)  # its steps take 3 s each
            frozen = fleet.start()
            assert _wait(lambda: bool(counts.executions), 60), fleet.output()
            frozen.send_signal(signal.SIGSTOP)  # mid-step, its connections open
            fleet.start()  # takes the run over once the frozen one's TTL ran out
            assert _wait(lambda: unfinished(journal) == 0, 120), fleet.output()
            frozen.send_signal(signal.SIGCONT)
            assert _wait(lambda: "lost chaosflow.job:" in fleet.logs[0].read_text(), 60), (
                fleet.output()
            )
        finally:
            fleet.kill_all()
        [item] = journal.queue_items(queue="chaos")
        assert item.outcome == "completed" and item.claims == 2
        assert journal.results([item.run_id]) != {}
        assert sum(counts.effects.values()) == 1  # the woken worker wrote and did nothing more
        pids = counts.executions[(0, "prepare")]
        assert len(pids) == 2 and pids[0] == frozen.pid, counts.executions
