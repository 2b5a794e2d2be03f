"""``lil journal copy``: a journal of real runs moves DuckDB -> PostgreSQL -> DuckDB and every
surface shows the same (``lil runs list/show --json``, outputs, approvals, checkpoints, cache,
proposals, events), and it still works where it left off (a resume, an approval decided after
the move)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from letitloop.journal import open_journal
from tests.conftest import _kill_owner
from tests.helpers import lil_json, run_lil
from tests.postgres.copy_workload import Draft, fill, snapshot


def _copy(src: str, dst: str) -> dict[str, Any]:
    return lil_json("journal", "copy", src, dst, "--json", timeout=300)  # type: ignore[no-any-return]


# What a listing says about a run that every backend derives from the records alike. Left out:
# ``updated`` (DuckDB moves it with a marker's resolution, PostgreSQL does not), a LangGraph
# thread's ``created`` (the DuckDB owner folds it as the time of the last checkpoint of its first
# fold batch, PostgreSQL and memory as its first checkpoint's) and the fields only some backends
# fill so far (``active_seconds``, ``budget``). The round trip back to DuckDB compares them all.
RUN_FIELDS = (
    "run_id",
    "workflow",
    "key",
    "status",
    "epoch",
    "attempt",
    "steps_done",
    "current_step",
    "holder",
    "parent",
    "error",
    "cost_micros",
    "tokens",
    "saved_micros",
)


def _comparable(snap: dict[str, Any], source: bool = False, across: bool = True) -> dict[str, Any]:
    """A snapshot as the copy must keep it. From the source's, drop what no read of the contract
    returns (and the copy reports): the result of an epoch a reset superseded. ``across``
    backends, keep of each run what every backend derives alike (``RUN_FIELDS``)."""
    epochs = {r["run_id"]: r["epoch"] for r in snap["runs"]}
    kept = []
    for e in snap["events"]:
        data = json.loads(e[6])
        if not (source and e[1] == "done" and data["epoch"] < epochs.get(e[0], 0)):
            kept.append(e)

    def core(run: dict[str, Any]) -> dict[str, Any]:
        created = {} if run["run_id"].startswith("langgraph:") else {"created": run["created"]}
        return {k: run[k] for k in RUN_FIELDS} | created if across else run

    shown = {rid: d | {"run": core(d["run"])} for rid, d in snap["shown"].items()}
    return snap | {"events": kept, "runs": [core(r) for r in snap["runs"]], "shown": shown}


@pytest.fixture
def duckdb_source(tmp_path: Path) -> Any:
    path = tmp_path / "laptop" / "journal.duckdb"
    journal = open_journal(str(path))
    fill(str(path), tmp_path, journal)
    yield str(path), journal
    _kill_owner(path)


def test_copy_duckdb_to_postgres_and_back_shows_the_same(
    duckdb_source: Any, pg_dsn: str, tmp_path: Path
) -> None:
    src, src_journal = duckdb_source
    before = snapshot(src, src_journal)
    assert len(before["runs"]) == 6 and len(before["approvals"]) == 2
    assert before["checkpoints"] and before["cache"] and before["proposals"]

    report = _copy(src, pg_dsn)
    assert report["runs"] == 5 and report["threads"] == 1, report
    assert report["key"] == "copied"
    assert report["approvals"] == 2 and report["proposals"] == 1 and report["cache_entries"] == 1
    assert report["left_out"] == {"results of epochs superseded by a reset": 1}
    on_pg = _comparable(snapshot(pg_dsn, open_journal(pg_dsn)))
    expected = _comparable(before, source=True)
    for part in expected:
        assert on_pg[part] == expected[part], part

    back = tmp_path / "back" / "journal.duckdb"
    try:
        report = _copy(pg_dsn, str(back))
        assert report["left_out"] == {}, report  # nothing more is lost on the way back
        again = _comparable(snapshot(str(back), open_journal(str(back))), across=False)
        exact = _comparable(before, source=True, across=False)
        for part in exact:  # DuckDB again: the same in every field
            assert again[part] == exact[part], part
    finally:
        _kill_owner(back)


def test_a_copied_journal_goes_on_where_the_source_stopped(duckdb_source: Any, pg_dsn: str) -> None:
    src, _ = duckdb_source
    _copy(src, pg_dsn)
    pg = open_journal(pg_dsn)
    pending = pg.approvals(status="pending")
    assert [a.payload for a in pending] == [{"title": "post 2"}]
    decided = run_lil(
        "approvals", "approve", pending[0].id, "--journal", pg_dsn, "--json", timeout=300
    )
    assert decided.returncode == 0, decided.stderr

    from letitloop import approval, durable, step

    ran: list[str] = []

    @durable(journal=pg_dsn, name="copy.approve", run_id="a{n}")
    def approve(n: int) -> str:
        draft = step("draft", lambda: ran.append("draft") or {"title": f"post {n}"})
        typed = step("typed", lambda t: ran.append("typed") or Draft(t), f"post {n}")
        d = approval("publish", draft, wait=False)
        return f"published {typed.title}" if d.approved else "dropped"

    assert approve(1) == "published post 1" and approve(2) == "published post 2"
    # the steps were journaled on the laptop: they replay from the copy, the dataclass
    # authenticated by the source's key, which the copy carried over
    assert ran == []
    assert {r.run_id: r.status for r in pg.list_runs(workflow="copy.approve")} == {
        "copy.approve:a1": "completed",
        "copy.approve:a2": "completed",
    }


def test_copy_refuses_a_destination_with_records(duckdb_source: Any, tmp_path: Path) -> None:
    src, _ = duckdb_source
    other = tmp_path / "other" / "journal.duckdb"
    try:
        from tests.cli.cli_workflows import pipeline

        pipeline(other, [])()
        done = run_lil("journal", "copy", src, str(other), timeout=300)
        assert done.returncode == 1
        assert "is not empty" in done.stderr and "fix:" in done.stderr
        runs = open_journal(str(other)).list_runs()
        assert [r.run_id for r in runs] == ["tests.pipeline:p1"]  # nothing was written
    finally:
        _kill_owner(other)


def test_copy_refuses_a_source_with_a_run_executing(tmp_path: Path) -> None:
    src = tmp_path / "busy" / "journal.duckdb"
    dst = tmp_path / "dst" / "journal.duckdb"
    try:
        journal = open_journal(str(src))
        journal.open_run(run_id="wf:busy", workflow="wf", key="busy")  # held by this process
        done = run_lil("journal", "copy", str(src), str(dst), timeout=300)
        assert done.returncode == 1
        assert "being executed" in done.stderr and "wf:busy" in done.stderr
    finally:
        _kill_owner(src)
        _kill_owner(dst)


def test_copy_into_the_memory_twin_and_import_refuses_a_held_run(duckdb_source: Any) -> None:
    from letitloop.errors import RunLockedError
    from letitloop.journal._copy import copy_journal
    from letitloop.journal._memory import MemoryJournal, MemoryStore

    _, src = duckdb_source
    store = MemoryStore()
    twin = MemoryJournal(store)
    report = copy_journal(src, twin)
    assert report.runs == 5 and report.threads == 1 and report.approvals == 2

    def core(journal: Any) -> Any:
        runs = {r.run_id: (r.status, r.epoch, r.attempt, r.steps_done) for r in journal.list_runs()}
        approvals = sorted((a.id, a.status, a.decided_by) for a in journal.approvals())
        rows = [
            (c.thread_id, c.checkpoint_id, c.checkpoint, len(c.writes))
            for c in journal.checkpoints()
        ]
        return runs, approvals, rows

    assert core(twin) == core(src)

    # a run some session holds in the destination is refused, and nothing of it is written
    other = MemoryJournal(MemoryStore())
    holder = MemoryJournal(other.store)
    holder.open_run(run_id="wf:held", workflow="wf", key="held")
    before = len(other.store.records)
    ok = {"k": "ok", "run": "wf:held", "epoch": 0, "pos": 0, "att": 1, "kind": "step"}
    ok |= {"name": "s", "fp": "", "ts": 1.0, "codec": "json", "out": b"1", "next": None}
    with pytest.raises(RunLockedError):
        other.import_records([ok])
    assert len(other.store.records) == before
