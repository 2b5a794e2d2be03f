"""Issue 29, point 8: every surface offers a run action only where it applies, by one rule
(``tui._actions.run_actions``): the lab gets it from the server as the run's ``actions`` (its
buttons: tests/jupyter/test_lab_ui.py; its refusals: tests/jupyter/test_server.py) and lil-tui
refuses the keys that do not apply, saying why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from letitloop.tui._actions import run_actions

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))


@pytest.mark.parametrize(
    ("status", "extra", "offered"),
    [
        ("completed", {}, ("reset",)),
        ("running", {}, ("budget", "cancel")),
        ("suspended", {}, ("resume", "budget", "cancel", "reset")),
        ("failed", {"dead_letter": True}, ("resume", "retry", "budget", "cancel", "reset")),
        ("interrupted", {}, ("resume", "budget", "cancel", "reset")),
        ("cancelled", {}, ("budget", "reset")),
        ("reset", {}, ("resume", "budget", "cancel")),
        ("interrupted", {"parent": "p:1"}, ("budget", "cancel", "reset")),  # a child run
        ("interrupted", {"workflow": "langgraph:g"}, ("budget", "cancel")),
    ],
)
def test_the_rule(status: str, extra: dict[str, object], offered: tuple[str, ...]) -> None:
    assert run_actions(status, **extra) == offered  # type: ignore[arg-type]


async def test_lil_tui_refuses_what_does_not_apply_to_a_completed_run(journal_path: Path) -> None:
    import tui_workflows as wf
    from tui_helpers import settle

    from letitloop.journal.duckdb._client import open_journal
    from letitloop.tui._app import LilApp
    from letitloop.tui._widgets import ConfirmScreen, PromptScreen

    wf.pipeline(journal_path, "p1")()
    app = LilApp(journal_path)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        for key, said in (
            ("R", "is completed: nothing to resume"),
            ("t", "has no dead-lettered step to retry"),
            ("b", "is completed: nothing to budget"),
            ("c", "is completed: nothing to cancel"),
        ):
            await pilot.press(key)
            await settle(app, pilot)
            assert not isinstance(app.screen, ConfirmScreen | PromptScreen), key
            shown = [n.message for n in app._notifications]
            assert any(said in m for m in shown), (key, shown)
        await pilot.press("x")  # reset applies: a completed run can start over
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
    run = open_journal(journal_path).get_run("etl.pipeline:p1").run
    assert run.status == "completed" and run.epoch == 0
