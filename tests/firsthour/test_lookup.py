"""Point 4: a run is found by its id, its key, or any unambiguous prefix of either, everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from letitloop import durable, step
from letitloop.errors import JournalError
from letitloop.journal._lookup import match_run
from tests.helpers import invoke_lil

IDS = ["etl.load:9d6da7dd0a1b2c3d", "etl.load:9d6e0000ffff1111", "report.daily:monday"]


def test_prefix_of_the_key_finds_the_run() -> None:
    assert match_run("9d6da", IDS) == IDS[0]
    assert match_run("monday", IDS) == IDS[2]  # the whole key
    assert match_run("mon", IDS) == IDS[2]  # a prefix of the key
    assert match_run("report.d", IDS) == IDS[2]  # a prefix of the id
    assert match_run("etl.load:9d6e", IDS) == IDS[1]


def test_a_workflow_name_picks_its_run_not_the_child_runs_of_its_map() -> None:
    ids = [
        "cli_fan:9d6da7dd",
        "cli_fan.sq:9d6da7dd.e0.p0.0.ab12",
        "cli_fan.sq:9d6da7dd.e0.p0.1.cd34",
    ]
    assert match_run("cli_fan", ids) == ids[0]
    assert match_run("cli_fan.sq:9d6da7dd.e0.p0.1", ids) == ids[2]  # a child by its prefix
    with pytest.raises(JournalError) as info:  # two runs of one workflow: both are listed
        match_run("etl.load", IDS)
    assert info.value.candidates == IDS[:2]  # type: ignore[attr-defined]


def test_an_ambiguous_prefix_lists_the_candidates() -> None:
    with pytest.raises(JournalError) as info:
        match_run("9d6", IDS)
    assert IDS[0] in info.value.message and IDS[1] in info.value.message
    assert info.value.candidates == IDS[:2]  # type: ignore[attr-defined]
    assert info.value.fix is not None and "more of the run id or key" in info.value.fix
    with pytest.raises(JournalError, match="lil runs list"):
        match_run("nothing-like-it", IDS)


def test_every_journal_finds_a_run_by_a_prefix_of_its_derived_key(any_journal: Any) -> None:
    @durable(journal=any_journal, name="etl.load")
    def load(n: int) -> int:
        return step("n", lambda: n)

    load(1)
    run = any_journal.list_runs()[0]
    assert any_journal.find_run(run.key[:4]) == run.run_id
    assert any_journal.get_run(any_journal.find_run(run.key[:6])).run.key == run.key


def test_lil_runs_commands_accept_a_key_prefix(journal_path: Path) -> None:
    from letitloop.journal.duckdb._client import open_journal

    journal = open_journal(journal_path)

    @durable(journal=journal, name="etl.load")
    def load(n: int) -> int:
        return step("n", lambda: n)

    load(1)
    run = journal.list_runs()[0]
    prefix = run.key[:4]
    for args in (["runs", "show", prefix], ["runs", "show", prefix, "--json"]):
        result = invoke_lil(*args, journal=journal_path)
        assert result.exit_code == 0, result.output
        assert run.run_id in result.stdout
    reset = invoke_lil("runs", "reset", prefix, "--yes", journal=journal_path)
    assert reset.exit_code == 0, reset.output
    assert journal.get_run(run.run_id).run.epoch == 1
