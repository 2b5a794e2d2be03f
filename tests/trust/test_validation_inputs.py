"""Point 18 of issue 14: bad input gets a clear error naming the fix, nothing half-written, and
no traceback reaches a user. Real owner, real DuckDB file, the real ``lil`` CLI.

(A negative or infinite ``--usd`` is in test_validation_numbers.py, a non-ASCII receipt
signature in test_auth_receipts.py.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from letitloop import approval, durable, step
from letitloop.errors import ConfigError, JournalError, LetItLoopError, Suspended
from tests.helpers import invoke_lil


def _lil(path: Path, *args: str) -> Any:
    res = invoke_lil(*args, journal=path)
    assert "Traceback" not in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": float("nan")},
        {"timeout": float("inf")},
        {"estimate": float("nan")},
        {"estimate": float("inf")},
        {"estimate": -1.0},
        {"ttl": float("nan")},
    ],
    ids=["timeout-nan", "timeout-inf", "estimate-nan", "estimate-inf", "estimate-neg", "ttl-nan"],
)
def test_non_finite_policy_numbers_fail_at_the_call(journal: Any, options: dict[str, Any]) -> None:
    @durable(journal=journal, run_id="policy-1")
    def flow() -> int:
        return step("one", lambda: 1, **options)

    with pytest.raises(ConfigError) as info:
        flow()
    assert info.value.fix and ("finite" in str(info.value) or ">= 0" in str(info.value))
    (run,) = journal.list_runs()
    assert journal.get_run(run.run_id).attempts == []  # no step was journaled


@pytest.mark.parametrize("name", ["fetch\ud800", "fetch\nuser", "fetch\x1b[31m"])
def test_step_names_must_be_printable(journal: Any, name: str) -> None:
    @durable(journal=journal, run_id="names-1")
    def flow() -> int:
        return step(name, lambda: 1)

    with pytest.raises(ConfigError, match="printable"):
        flow()
    (run,) = journal.list_runs()
    assert journal.get_run(run.run_id).attempts == []


@pytest.mark.parametrize("run_id", ["a\nb   completed   forged", "x\x1b]0;owned\x07", "s\udc80"])
def test_run_ids_and_names_must_be_printable(journal: Any, journal_path: Path, run_id: str) -> None:
    with pytest.raises(ConfigError, match="printable"):

        @durable(journal=journal, run_id=run_id)
        def flow() -> int:
            return 1

    with pytest.raises(ConfigError, match="printable"):

        @durable(journal=journal, name=run_id)
        def flow2() -> int:
            return 1

    # a client that skips those checks: the owner refuses the run itself
    if "\udc80" not in run_id:
        with pytest.raises(JournalError, match="printable"):
            journal.open_run(run_id=f"w:{run_id}", workflow="w", key=run_id)
    assert journal.list_runs() == []
    listing = _lil(journal_path, "runs", "list")
    assert listing.exit_code == 0 and "forged" not in listing.output


def test_a_deeply_nested_payload_is_a_clear_error(journal: Any, journal_path: Path) -> None:
    @durable(journal=journal, run_id="deep-1")
    def flow() -> Any:
        return approval("ok?", {"a": 1}, wait=False).payload

    with pytest.raises(Suspended):
        flow()
    (row,) = journal.approvals(status="pending")
    for depth in (100_000, 5_000):
        res = _lil(
            journal_path, "approvals", "approve", row.id, "--payload", "[" * depth + "]" * depth
        )
        assert res.exit_code != 0 and "nested too deeply" in res.output, res.output
    assert [r.id for r in journal.approvals(status="pending")] == [row.id]


def test_a_corrupt_duckdb_file_is_a_clear_error_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "journal" / "journal.duckdb"
    path.parent.mkdir()
    junk = os.urandom(4096)
    path.write_bytes(junk)
    res = _lil(path, "runs", "list")
    assert res.exit_code != 0
    assert "cannot be opened by DuckDB" in res.output and "restore" in res.output
    assert path.read_bytes() == junk  # nothing written into it


def test_errors_here_are_letitloop_errors_with_a_fix() -> None:
    """The point's contract: what reaches a user is one of ours, naming the fix."""
    from letitloop.journal._records import check_text

    with pytest.raises(LetItLoopError) as info:
        check_text("a\nb", "name")
    assert info.value.fix
    assert json.dumps({"fix": info.value.fix})
