"""Folding records into DuckDB: new rows are inserted, rows already there are merged.

The fold inserts an attempt whose start is in the batch as a new row (a plain ``INSERT`` costs a
third of a merging one); everything else merges. A record folded twice, or an outcome folded
before its start (written on another connection), makes the plain insert fail: the batch is then
folded again, merging, with the same result as if it had merged from the start.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from letitloop.journal.duckdb.owner._store import Store


def _run(rid: str, ts: float) -> dict[str, Any]:
    return {"k": "run", "run": rid, "wf": "w", "key": rid, "epoch": 0, "try": 1, "args": None} | {
        "entry": None,
        "parent": None,
        "by": "1@h",
        "ts": ts,
    }


def _step(k: str, rid: str, pos: int, ts: float) -> dict[str, Any]:
    rec = {"k": k, "run": rid, "epoch": 0, "pos": pos, "att": 1, "kind": "step"}
    rec |= {"name": f"s{pos}", "fp": "fp", "ts": ts}
    if k == "ok":
        rec |= {"codec": "json", "out": b'"out"', "next": None}
    return rec


def _rows(store: Store, rid: str) -> list[tuple[Any, ...]]:
    return store.db.execute(
        "SELECT position, status, started IS NOT NULL, ended IS NOT NULL, output FROM steps "
        "WHERE run_id = ? ORDER BY position",
        [rid],
    ).fetchall()


def _events(store: Store, rid: str) -> list[tuple[Any, ...]]:
    return store.db.execute(
        "SELECT kind, position FROM events WHERE run_id = ? ORDER BY seq", [rid]
    ).fetchall()


def test_a_start_and_its_outcome_in_one_fold_or_in_two(tmp_path: Path) -> None:
    store = Store(tmp_path / "j.duckdb")
    ts = time.time()
    store.fold(
        [(10, _run("r", ts)), (20, _step("step", "r", 0, ts)), (30, _step("ok", "r", 0, ts))]
    )
    store.fold([(40, _step("step", "r", 1, ts))])  # its outcome comes in the next fold
    store.fold([(50, _step("ok", "r", 1, ts)), (60, _step("step", "r", 2, ts))])
    assert _rows(store, "r") == [
        (0, "completed", True, True, b'"out"'),
        (1, "completed", True, True, b'"out"'),
        (2, "started", True, False, None),
    ]
    assert len(_events(store, "r")) == 6
    assert store.folded_lsn == 60
    store.close()


def test_an_outcome_folded_before_its_start_and_a_record_folded_twice(tmp_path: Path) -> None:
    """Both make the plain insert meet a row that is there: the batch merges instead, and the
    result is what merging gives (nothing is lost, duplicated or set aside)."""
    store = Store(tmp_path / "j.duckdb")
    ts = time.time()
    store.fold([(10, _run("r", ts)), (20, _step("ok", "r", 0, ts))])
    store.fold([(30, _step("step", "r", 0, ts)), (40, _step("step", "r", 1, ts))])
    store.fold([(40, _step("step", "r", 1, ts)), (50, _step("ok", "r", 1, ts))])  # 40 again
    assert _rows(store, "r") == [
        (0, "completed", True, True, b'"out"'),  # the late start did not make it "started"
        (1, "completed", True, True, b'"out"'),
    ]
    assert [e[0] for e in _events(store, "r")] == ["run", "ok", "step", "step", "ok"]
    assert store.quarantine_rows() == []
    assert store.folded_lsn == 50
    store.close()


def test_a_run_started_again_and_a_start_folded_twice_merge_into_its_row(tmp_path: Path) -> None:
    """A run's first start (try 1, epoch 0) is inserted as a new row; its second try merges;
    the same first start folded again (a resend) makes the insert fail, and the part merges."""
    store = Store(tmp_path / "j.duckdb")
    ts = time.time()
    store.fold([(10, _run("r", ts)), (20, _step("ok", "r", 0, ts))])
    store.fold([(30, _run("r", ts + 1) | {"try": 2})])
    store.fold([(40, _run("s", ts)), (50, _run("s", ts))])  # the same start twice in one part
    rows = store.db.execute("SELECT run_id, tries, status FROM runs ORDER BY run_id").fetchall()
    assert rows == [("r", 2, "running"), ("s", 1, "running")]
    assert store.quarantine_rows() == [] and store.folded_lsn == 50
    store.close()
