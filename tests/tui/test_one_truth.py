"""lil-tui says what every surface says (issue 36): its effects screen lists exactly
``operate.doubts()``, and a resume it refuses is refused with the cause ``lil runs resume``
prints. Real processes SIGKILLed inside their blocks, a real DuckDB journal, Textual's Pilot."""

from __future__ import annotations

from pathlib import Path

import pytest
import tui_workflows as wf
from textual.widgets import DataTable
from tui_helpers import in_doubt, killed, settle, until

from letitloop.errors import ApprovalPending
from letitloop.journal import open_journal
from letitloop.operate import doubts
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen
from letitloop.tui._effects import EffectsScreen
from tests.helpers import run_lil


def _markers(journal_path: Path, tmp_path: Path) -> None:
    """Three runs with a marker each: one killed inside it (in doubt); one killed inside it,
    resolved ``redo`` and completed by its second attempt, the run failing after it; one killed
    inside it, then its code edited (a notebook cell) so the marker's attempt is superseded,
    the run failing later. Only the first is in doubt."""
    in_doubt(journal_path, tmp_path / "sent.txt")
    killed(journal_path, "charge")
    journal = open_journal(journal_path)
    journal.resolve_marker("shop.charge:c1", "charge_card", "redo", "ops@test")
    with pytest.raises(RuntimeError, match="warehouse"):
        wf.charger(journal_path)()
    killed(journal_path, "cell")
    with pytest.raises(RuntimeError, match="warehouse"):
        wf.edited_cell(journal_path, edited=True)()


async def test_the_effects_screen_lists_exactly_what_operate_finds(
    journal_path: Path, tmp_path: Path
) -> None:
    _markers(journal_path, tmp_path)
    journal = open_journal(journal_path)
    charge = [a for a in journal.get_run("shop.charge:c1").attempts if a.kind == "marker"]
    assert [(a.attempt, a.status) for a in charge] == [(1, "started"), (2, "completed")]
    cell = [a for a in journal.get_run("shop.cell:n1").attempts if a.position == 1]
    assert [(a.kind, a.status) for a in cell] == [("marker", "superseded"), ("step", "completed")]
    found = doubts(journal)
    assert [(d.run_id, d.marker, d.attempt) for d in found] == [
        ("shop.notify:order-1", "send_email", 1)
    ]
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await until(pilot, lambda: isinstance(app.screen, EffectsScreen) and app.screen.loaded)
        table = app.screen.query_one("#effects", DataTable)
        shown = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        expected = [
            [d.run_id, d.run_status, str(d.position), d.marker, str(d.attempt)] for d in found
        ]
        assert [row[:5] for row in shown] == expected
        assert [row[6] for row in shown] == [d.why for d in found]


async def test_a_refused_resume_says_the_cause_lil_runs_resume_prints(journal_path: Path) -> None:
    with pytest.raises(ApprovalPending):
        wf.editable(journal_path)()
    run_id = "blog.edit:post-2"
    open_journal(journal_path).cancel_run(run_id, "ops@test", "the post was withdrawn")
    cli = run_lil("--journal", str(journal_path), "runs", "resume", run_id)
    assert cli.returncode == 1, cli.stderr
    error, fix = cli.stderr.strip().splitlines()
    assert error.startswith("error: ") and fix.startswith("  fix: ")
    cause = error.removeprefix("error: ")
    assert "cancelled by ops@test: the post was withdrawn" in cause
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(app, pilot)
        app.open_run(run_id)
        await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.view)
        await pilot.press("R")
        said = f"{cause}\nfix: {fix.removeprefix('  fix: ')}"
        await until(pilot, lambda: said in [n.message for n in app._notifications])
        assert not app.resumes  # refused before any process started
    assert open_journal(journal_path).get_run(run_id).run.status == "cancelled"
