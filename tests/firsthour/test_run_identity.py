"""Point 1: a fixed run id called with new arguments never silently returns the earlier result."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from letitloop import RunArgumentsError, durable, step
from letitloop.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def sync(journal: Any, calls: list[int], **opts: Any) -> Any:
    @durable(journal=journal, name="sync_workflow", **opts)
    def sync_workflow(user_id: int) -> str:
        return step("summarize", lambda: calls.append(user_id) or f"customer {user_id}")

    return sync_workflow


def test_new_arguments_under_a_fixed_id_raise_naming_both_and_the_fixes(any_journal: Any) -> None:
    calls: list[int] = []
    fn = sync(any_journal, calls, goal_id="customer_sync")
    assert fn(7) == "customer 7"
    assert fn(7) == "customer 7" and calls == [7]  # the same call still returns its result
    with pytest.raises(RunArgumentsError) as info:
        fn(8)
    err = info.value
    assert (err.journaled, err.called) == ("sync_workflow(7)", "sync_workflow(8)")
    assert "sync_workflow(7)" in err.message and "sync_workflow(8)" in err.message
    assert err.fix is not None and "{user_id}" in err.fix
    assert "lil runs reset sync_workflow:customer_sync" in err.fix and "ignore_args" in err.fix
    assert calls == [7]  # nothing ran, and nothing was written for the refused call
    run = any_journal.get_run("sync_workflow:customer_sync")
    assert run.run.attempt == 1 and run.run.status == "completed"
    assert fn(7) == "customer 7"


def test_an_unfinished_run_is_not_resumed_with_other_arguments(any_journal: Any) -> None:
    @durable(journal=any_journal, name="half", run_id="fixed")
    def half(n: int) -> int:
        step("one", lambda: n)
        raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        half(1)
    with pytest.raises(RunArgumentsError):
        half(2)


def test_ignore_args_is_the_explicit_same_id_one_result(any_journal: Any) -> None:
    calls: list[int] = []
    fn = sync(any_journal, calls, run_id="once", ignore_args=True)
    assert fn(7) == "customer 7"
    assert fn(8) == "customer 7" and calls == [7]


def test_a_placeholder_gives_each_argument_its_own_run(any_journal: Any) -> None:
    calls: list[int] = []
    fn = sync(any_journal, calls, goal_id="customer_sync-{user_id}")
    assert (fn(7), fn(8), fn(7)) == ("customer 7", "customer 8", "customer 7")
    assert calls == [7, 8]
    ids = {r.run_id for r in any_journal.list_runs(workflow="sync_workflow")}
    assert ids == {"sync_workflow:customer_sync-7", "sync_workflow:customer_sync-8"}


def test_a_placeholder_naming_no_parameter_is_a_config_error(any_journal: Any) -> None:
    fn = sync(any_journal, [], run_id="sync-{customer}")
    with pytest.raises(ConfigError, match="user_id"):
        fn(7)


def test_the_readme_headline_example_gives_each_customer_their_own_result(tmp_path: Path) -> None:
    block = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)[0]
    assert re.search(r"goal_id=\"[^\"]*\{user_id\}", block), "a key that differs per argument"
    script = tmp_path / "headline.py"
    script.write_text(block)
    journal = tmp_path / "journal.duckdb"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LIL_JOURNAL": str(journal)}
    try:
        out = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
        )
    finally:
        from tests.conftest import _kill_owner

        _kill_owner(journal)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["customer 7 is on pro", "customer 8 is on pro"]
