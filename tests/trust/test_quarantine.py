"""Point 2 of issue 14: an owner that cannot fold a record sets it aside and keeps serving.

A record that no longer folds (written by an older letitloop before its numbers were bounded,
or damaged) used to make the owner exit on every start. Now it goes to the quarantine, which
``lil journal doctor`` shows (naming the run) and resolves, and every other run is served.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import msgpack

from letitloop import durable, step
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb._client import open_journal, stop_owner
from letitloop.journal.duckdb.owner._log import frame
from tests.helpers import invoke_lil


def _poison(path: Path, run_id: str) -> None:
    """Append, while no owner runs, a record that passes the old checks but cannot be folded:
    a completed attempt claiming 2**40 input tokens (the column holds 2**31)."""
    rec = {"k": "ok", "run": run_id, "epoch": 0, "pos": 0, "att": 1, "ts": time.time()}
    rec |= {"kind": "step", "name": "s", "fp": "x", "codec": "json", "out": b"1", "next": None}
    rec["cost"] = {"usd_micros": 1, "in": 2**40, "out": 1, "model": None}
    seg = sorted(JournalPaths(path).log_dir.glob("*.wal"))[-1]
    with open(seg, "ab") as f:
        f.write(frame(msgpack.packb(rec, use_bin_type=True)))


def _doctor(path: Path, *args: str) -> Any:
    res = invoke_lil("journal", "doctor", "--json", *args, journal=path)
    assert "Traceback" not in res.output
    return json.loads(res.output), res.exit_code


def test_an_unfoldable_record_is_quarantined_and_the_owner_serves(journal_path: Path) -> None:
    journal = open_journal(journal_path)

    @durable(journal=journal_path, name="fine")
    def fine(n: int) -> int:
        return step("one", lambda: n + 1)

    assert fine(1) == 2
    stop_owner(journal_path)
    _poison(journal_path, "victim:run")

    journal = open_journal(journal_path)  # a new owner replays the log: it must start
    runs = {r.run_id: r for r in journal.list_runs()}
    assert any(r.workflow == "fine" and r.status == "completed" for r in runs.values())
    assert fine(1) == 2  # the completed run still returns its journaled result
    assert fine(5) == 6  # and new runs work
    q = journal.quarantine()["rows"]
    assert [(row[1], row[2]) for row in q] == [("victim:run", "ok")]
    assert "cost" in q[0][3] or "Conversion" in q[0][3]

    report, code = _doctor(journal_path)
    assert code == 1
    (check,) = [c for c in report["checks"] if c["name"] == "quarantine"]
    assert not check["ok"] and "victim:run" in check["detail"]

    # retrying does not help (the record is still too big for the column): it stays
    report, code = _doctor(journal_path, "--retry-quarantined")
    assert len(journal.quarantine()["rows"]) == 1

    # the owner stays up across restarts: the record is not replayed into a crash again
    stop_owner(journal_path)
    journal = open_journal(journal_path)
    assert len(journal.quarantine()["rows"]) == 1
    assert fine(7) == 8

    report, code = _doctor(journal_path, "--drop-quarantined", str(q[0][0]))
    (check,) = [c for c in report["checks"] if c["name"] == "quarantine"]
    assert check["ok"] and code == 0, report
    assert journal.quarantine()["rows"] == []


def test_a_record_that_is_not_even_msgpack_is_quarantined(journal_path: Path) -> None:
    journal = open_journal(journal_path)

    @durable(journal=journal_path, name="fine")
    def fine() -> int:
        return step("one", lambda: 1)

    fine()
    stop_owner(journal_path)
    seg = sorted(JournalPaths(journal_path).log_dir.glob("*.wal"))[-1]
    with open(seg, "ab") as f:  # an intact frame (its CRC matches) holding garbage
        f.write(frame(b"\xc1\xc1 not msgpack"))
    journal = open_journal(journal_path)
    assert [r.workflow for r in journal.list_runs()] == ["fine"]
    (row,) = journal.quarantine()["rows"]
    assert row[1] is None and row[3]


def test_store_folds_the_good_records_of_a_batch_and_sets_the_bad_one_aside(
    tmp_path: Path,
) -> None:
    """The live path (a batch folded while serving): only the bad record is set aside."""
    from letitloop.journal.duckdb.owner._store import Store

    store = Store(tmp_path / "j.duckdb")
    ts = time.time()

    def run(rid: str, args: Any) -> dict[str, Any]:
        return {"k": "run", "run": rid, "wf": "w", "key": rid, "epoch": 0, "try": 1} | {
            "args": args,
            "entry": None,
            "parent": None,
            "by": "me",
            "ts": ts,
        }

    # an args pair whose bytes are not bytes cannot go into the BLOB column
    store.fold([(10, run("a", None)), (20, run("b", [1, 2])), (30, run("c", None))])
    assert sorted(store.known_runs()) == ["a", "c"]
    assert store.folded_lsn == 30
    assert [r[:3] for r in store.quarantine_rows()] == [[20, "b", "run"]]
    store.close()
