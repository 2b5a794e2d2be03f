"""Actions from the dashboard (effects, splices, retry, budget, reset, resume), each checked in
the journal afterwards; journals are filled by running real durable workflows."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tui_workflows as wf
from textual.widgets import DataTable, Input, Static
from tui_helpers import HERE, cell, in_doubt, plain, settle, until

from letitloop import BudgetExceeded, DeadLetteredError
from letitloop.journal._config import who
from letitloop.journal.duckdb._client import open_journal
from letitloop.splice import propose_splice
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen
from letitloop.tui._widgets import ConfirmScreen, PromptScreen

ROOT = HERE.parents[1]


@pytest.mark.parametrize("key", ["d", "r"])
async def test_resolve_an_effect_in_doubt(journal_path: Path, tmp_path: Path, key: str) -> None:
    sent = tmp_path / "sent.txt"
    in_doubt(journal_path, sent)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        table = app.screen.query_one("#effects", DataTable)
        assert table.row_count == 1
        assert cell(table, "shop.notify:order-1#1", "marker") == "send_email"
        await pilot.press(key)
        assert isinstance(app.screen, ConfirmScreen)  # asks first, saying what it means
        said = "it will never run again" if key == "d" else "happens twice"
        assert said in app.screen.question
        await pilot.press("escape")  # no: nothing is journaled
        await settle(app, pilot)
        assert table.row_count == 1
        assert open_journal(journal_path).get_run("shop.notify:order-1").run.status != "completed"
        await pilot.press(key, *"checked the outbox", "enter")  # a comment, then yes
        await until(pilot, lambda: table.row_count == 0)
    attempts = open_journal(journal_path).get_run("shop.notify:order-1").attempts
    marker = [a for a in attempts if a.kind == "marker"][-1]
    assert marker.resolution == ("done" if key == "d" else "redo")
    (resolve,) = [
        e
        for e in open_journal(journal_path).events(run_id="shop.notify:order-1")
        if e.kind == "resolve"
    ]
    assert resolve.data["note"] == "checked the outbox"  # the comment is journaled with it
    assert marker.resolved_by and "@" in marker.resolved_by
    assert wf.notifier(journal_path, sent)() == 42  # resolved: the run finishes
    assert sent.read_text().count("email") == (1 if key == "d" else 2)


def _module(tmp_path: Path) -> Path:
    src = tmp_path / "pricing.py"
    src.write_text("def price(x):\n    return x * 2\n\n\ndef other():\n    return 1\n")
    return src


async def test_apply_a_splice_proposal(journal_path: Path, tmp_path: Path) -> None:
    src = _module(tmp_path)
    journal = open_journal(journal_path)
    p = propose_splice(
        src, "price", "def price(x):\n    return x * 3\n", reason="new", journal=journal
    )
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert screen.query_one("#splices", DataTable).row_count == 1
        diff = plain(screen.query_one("#diff", Static))
        assert "-    return x * 2" in diff and "+    return x * 3" in diff
        await pilot.press("a")
        assert isinstance(app.screen, ConfirmScreen)
        assert "replace price in" in app.screen.question
        await pilot.press("escape")
        await settle(app, pilot)
        assert "return x * 2" in src.read_text()
        await pilot.press("a", *"checked the rounding", "enter")
        await until(pilot, lambda: screen.query_one("#splices", DataTable).row_count == 0)
    assert "return x * 3" in src.read_text()
    (after,) = journal.proposals()
    assert after.id == p.id and after.state == "applied"
    assert after.note == "checked the rounding"
    assert after.decided_by == who()


async def test_reject_a_splice_with_a_comment_and_show_a_conflict(
    journal_path: Path, tmp_path: Path
) -> None:
    src = _module(tmp_path)
    journal = open_journal(journal_path)
    first = propose_splice(src, "price", "def price(x):\n    return 0\n", journal=journal)
    second = propose_splice(src, "other", "def other():\n    return 2\n", journal=journal)
    src.write_text(src.read_text().replace("return 1", "return 5"))  # `other` changed meanwhile
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        table = screen.query_one("#splices", DataTable)
        await pilot.press("r")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"too risky", "enter")
        await until(pilot, lambda: table.row_count == 1)  # the first one left the list
        await pilot.press("a", "enter")  # the second one's target changed: a conflict
        await until(pilot, lambda: cell(table, second.id, "state") == "conflict")
        diff = plain(screen.query_one("#diff", Static))
        assert "CONFLICT" in diff and "+    return 2" in diff and "-    return 5" in diff
    states = {p.id: p for p in journal.proposals()}
    assert states[first.id].state == "rejected" and states[first.id].note == "too risky"
    assert states[second.id].state == "conflict"
    assert "return 5" in src.read_text() and "return 0" not in src.read_text()


async def test_retry_a_dead_lettered_step(journal_path: Path) -> None:
    run, _ = wf.dead_letter(journal_path, fail_times=3)
    with pytest.raises(DeadLetteredError):
        run()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        app.open_run("agent.dead:d1")
        await settle(app, pilot)
        assert "press t to retry" in plain(app.screen.query_one("#summary", Static))
        await pilot.press("t")
        journal = open_journal(journal_path)
        await until(
            pilot,
            lambda: any(a.resolution == "rearm" for a in journal.get_run("agent.dead:d1").attempts),
        )
        await until(pilot, lambda: "press t" not in plain(app.screen.query_one("#summary")))
    assert run() == "ok"  # re-armed: one more failure, then success
    attempts = open_journal(journal_path).get_run("agent.dead:d1").attempts
    assert [a.status for a in attempts] == ["failed", "failed", "failed", "completed"]


async def test_reset_asks_first_and_then_starts_the_run_over(journal_path: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        wf.failing(journal_path)()  # a failed run: reset applies (not to a completed one)
    journal = open_journal(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("x")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")  # no: nothing happens
        await settle(app, pilot)
        assert journal.get_run("etl.failing:f1").run.epoch == 0
        await pilot.press("x", *"new prices", "enter")
        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: cell(table, "etl.failing:f1", "status") != "failed")
    run = journal.get_run("etl.failing:f1").run
    assert run.epoch == 1 and run.status == "reset"
    (reset,) = [e for e in journal.events(run_id="etl.failing:f1") if e.kind == "reset"]
    assert reset.data["note"] == "new prices"  # the comment is journaled with the reset


async def test_raise_budget_then_resume_in_the_background(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(HERE)]))
    with pytest.raises(BudgetExceeded):
        wf.spend(4)
    journal = open_journal(journal_path)
    (run,) = journal.list_runs()
    assert run.status == "suspended"
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("b")
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one(Input).value = "1.00"
        await pilot.press("enter")
        budgets = lambda: [  # noqa: E731
            e.data for e in journal.events(run_id=run.run_id) if e.kind == "budget"
        ]
        await until(pilot, budgets)
        assert budgets()[-1]["usd_micros"] == 1_000_000
        await pilot.press("R")
        assert isinstance(app.screen, DetailScreen) and app.screen.run_id == run.run_id
        await until(pilot, lambda: app.resumes and app.resumes[0].process.poll() is not None)
        assert app.resumes[0].process.returncode == 0, app.resumes[0].tail()
        detail = app.screen
        await until(pilot, lambda: detail.view and detail.view.run.status == "completed")
        assert detail.view.total == 4
        assert "budget $1.00" in plain(detail.query_one("#cost-meter", Static))
    done = journal.get_run(run.run_id)
    assert done.run.status == "completed" and done.run.cost_micros == 80


def test_a_marker_whose_block_raised_is_in_doubt_until_resolved(journal_path: Path) -> None:
    from letitloop import atomic_marker, durable
    from letitloop.tui._model import Model

    @durable(journal=journal_path, name="shop.charge", run_id="c1")
    def charge() -> None:
        with atomic_marker("charge_card") as should_charge:
            if should_charge:
                raise ValueError("gateway timed out after sending")

    with pytest.raises(ValueError):
        charge()
    model = Model(journal_path)
    (row,) = model.effects()
    assert (row.run_id, row.marker) == ("shop.charge:c1", "charge_card")
    assert row.why == "ValueError: gateway timed out after sending"
    model.journal.resolve_marker(row.run_id, row.position, "done", "tester")
    assert model.effects() == []


async def test_cancel_asks_first_and_then_stops_the_run(
    journal_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from letitloop.errors import RunCancelledError

    monkeypatch.setenv("LIL_JOURNAL", str(journal_path))
    with pytest.raises(BudgetExceeded):
        wf.spend(4)
    journal = open_journal(journal_path)
    (run,) = journal.list_runs()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("c")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
        await settle(app, pilot)
        assert journal.get_run(run.run_id).run.status == "suspended"
        await pilot.press("c", *"runaway costs", "enter")
        table = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: cell(table, run.run_id, "status") == "cancelled")
    info = journal.get_run(run.run_id).run
    assert info.status == "cancelled" and "runaway costs" in info.error["message"]
    (cancel,) = [e for e in journal.events(run_id=run.run_id) if e.kind == "cancel"]
    assert cancel.data["reason"] == "runaway costs" and cancel.data["by"] == who()
    with pytest.raises(RunCancelledError):
        wf.spend(4)
