"""``lil journal copy``: a journal of real runs moves DuckDB -> PostgreSQL -> DuckDB and every
surface shows the same (``lil runs list/show --json``, outputs, approvals, checkpoints, cache,
proposals, events), and it still works where it left off (a resume, an approval decided after
the move)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from letitloop.journal import open_journal
from tests.conftest import ROOT, _kill_owner
from tests.postgres.copy_workload import fill, snapshot


def _lil(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "letitloop", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=False,
    )


def _copy(src: str, dst: str) -> dict[str, Any]:
    done = _lil("journal", "copy", src, dst, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _comparable(snap: dict[str, Any], source: bool = False) -> dict[str, Any]:
    """A snapshot as two backends must agree on it. From the source's, drop what no read of the
    contract returns (and the copy reports): the result of an epoch a reset superseded. From
    both, drop a LangGraph thread's ``created``: the DuckDB owner folds it as the time of the
    last checkpoint of its first fold batch, PostgreSQL and memory as its first checkpoint's."""
    epochs = {r["run_id"]: r["epoch"] for r in snap["runs"]}
    kept = []
    for e in snap["events"]:
        data = json.loads(e[6])
        if not (source and e[1] == "done" and data["epoch"] < epochs.get(e[0], 0)):
            kept.append(e)

    def unborn(run: dict[str, Any]) -> dict[str, Any]:
        lg = run["run_id"].startswith("langgraph:")
        return {k: v for k, v in run.items() if not (lg and k == "created")}

    shown = {
        run_id: detail | {"run": unborn(detail["run"])} for run_id, detail in snap["shown"].items()
    }
    return snap | {"events": kept, "runs": [unborn(r) for r in snap["runs"]], "shown": shown}


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
        again = _comparable(snapshot(str(back), open_journal(str(back))))
        for part in expected:
            assert again[part] == expected[part], part
    finally:
        _kill_owner(back)


def test_a_copied_journal_goes_on_where_the_source_stopped(duckdb_source: Any, pg_dsn: str) -> None:
    src, _ = duckdb_source
    _copy(src, pg_dsn)
    pg = open_journal(pg_dsn)
    pending = pg.approvals(status="pending")
    assert [a.payload for a in pending] == [{"title": "post 2"}]
    decided = _lil("approvals", "approve", pending[0].id, "--journal", pg_dsn, "--json")
    assert decided.returncode == 0, decided.stderr

    from letitloop import approval, durable, step

    ran: list[str] = []

    @durable(journal=pg_dsn, name="copy.approve", run_id="a{n}")
    def approve(n: int) -> str:
        draft = step("draft", lambda: ran.append("draft") or {"title": f"post {n}"})
        d = approval("publish", draft, wait=False)
        return "published" if d.approved else "dropped"

    assert approve(1) == "published" and approve(2) == "published"
    assert ran == []  # the drafts were journaled on the laptop: they replay from the copy
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
        done = _lil("journal", "copy", src, str(other))
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
        done = _lil("journal", "copy", str(src), str(dst))
        assert done.returncode == 1
        assert "being executed" in done.stderr and "wf:busy" in done.stderr
    finally:
        _kill_owner(src)
        _kill_owner(dst)
