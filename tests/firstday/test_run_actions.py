"""Issue 29, point 8: every surface offers a run action only where it applies, by one rule
(``operate.actions_for``): the lab gets it from the server as the run's ``actions`` (its
buttons: tests/jupyter/test_lab_ui.py; its refusals: tests/jupyter/test_server.py) and lil-tui
refuses the keys that do not apply, saying why."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))


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
            ("R", "already completed: there is nothing to resume"),  # operate.check_resumable
            ("t", "has no dead-lettered step to retry"),
            ("b", "is completed: nothing to budget"),
            ("c", "is completed: nothing to cancel"),
            ("x", "is completed: nothing to reset"),
        ):
            await pilot.press(key)
            await settle(app, pilot)
            assert not isinstance(app.screen, ConfirmScreen | PromptScreen), key
            shown = [n.message for n in app._notifications]
            assert any(said in m for m in shown), (key, shown)
    run = open_journal(journal_path).get_run("etl.pipeline:p1").run
    assert run.status == "completed" and run.epoch == 0
