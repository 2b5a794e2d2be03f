"""lil-tui on a PostgreSQL journal follows a run that another process writes: each step shows
up from pushed events (LISTEN/NOTIFY), well within a second of being journaled."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT
from tests.postgres.surface_workflows import RUN_ID

STEPS = 5


async def test_lil_tui_follows_a_run_in_another_process_within_a_second(
    pg_dsn: str, tmp_path: Path
) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "tui"))
    from textual.widgets import DataTable
    from tui_helpers import cell, settle, until

    from letitloop.tui._app import LilApp

    app = LilApp(pg_dsn)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(app, pilot)
        assert app.model.location.startswith("postgresql://")
        table = app.screen.query_one("#runs", DataTable)
        assert table.row_count == 0
        proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "tests" / "postgres" / "surface_workflows.py"),
                pg_dsn,
                str(tmp_path),
                str(STEPS),
            ],
            cwd=ROOT,
        )
        latencies = []
        try:
            await until(pilot, lambda: RUN_ID in table.rows, timeout=60)
            await until(pilot, lambda: cell(table, RUN_ID, "current") == "step_0")
            for i in range(STEPS):
                started = time.monotonic()
                (tmp_path / f"go.{i}").touch()
                if i < STEPS - 1:
                    await until(
                        pilot, lambda i=i: cell(table, RUN_ID, "current") == f"step_{i + 1}"
                    )
                else:
                    await until(pilot, lambda: cell(table, RUN_ID, "status") == "completed")
                latencies.append(time.monotonic() - started)
                assert (tmp_path / f"done.{i}").exists()  # shown only once journaled
        finally:
            for i in range(STEPS):
                (tmp_path / f"go.{i}").touch()
            assert proc.wait(60) == 0
        assert cell(table, RUN_ID, "steps") == f"{STEPS}/{STEPS}"
    # each latency is: the gate seen (5 ms polls), the step journaled, NOTIFY, the TUI redrawn
    assert statistics.median(latencies) < 1.0, latencies
    assert max(latencies) < 3.0, latencies


def test_the_installed_lil_tui_shows_a_postgres_journal(pg_dsn: str, tmp_path: Path) -> None:
    """``lil-tui --journal postgresql://...`` in a real terminal (tmux) follows the run."""
    import os

    sys.path.insert(0, str(ROOT / "tests" / "tui"))
    from test_tmux import LIL_TUI, Terminal

    env = dict(os.environ, TERM="xterm-256color", PYTHONPATH=str(ROOT))
    env.pop("LIL_JOURNAL", None)
    env.pop("TMUX", None)
    term = Terminal([str(LIL_TUI), "--journal", f"'{pg_dsn}'"], env)
    try:
        term.wait_for("runs", timeout=60)
        for i in range(STEPS):
            (tmp_path / f"go.{i}").touch()
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "tests" / "postgres" / "surface_workflows.py"),
                pg_dsn,
                str(tmp_path),
                str(STEPS),
            ],
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0
        shown = term.wait_for(RUN_ID, "completed", f"{STEPS}/{STEPS}", timeout=30)
        assert "error" not in shown.lower()
    finally:
        term.close()


async def test_the_cost_meter_shows_a_budget_set_on_postgres(pg_dsn: str) -> None:
    """The run screen's budget is the run summary's (``operate``), read from the journal's run
    listing: PostgreSQL's listing carries it as DuckDB's and the memory journal's do."""
    sys.path.insert(0, str(ROOT / "tests" / "tui"))
    from textual.widgets import Static
    from tui_helpers import plain, settle, until

    from letitloop import durable, step
    from letitloop.journal import open_journal
    from letitloop.tui._app import LilApp
    from letitloop.tui._detail import DetailScreen

    journal = open_journal(pg_dsn)

    @durable(journal=journal, name="pg.budget", run_id="b1")
    def flow() -> int:
        return int(step("one", lambda: 1))

    assert flow() == 1
    journal.set_budget("pg.budget:b1", "ana@test", usd_micros=2_500_000, tokens=900)
    assert journal.list_runs(workflow="pg.budget")[0].budget == (2_500_000, 900)
    assert journal.get_run("pg.budget:b1").run.budget == (2_500_000, 900)
    app = LilApp(pg_dsn)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.open_run("pg.budget:b1")
        await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.view)
        assert "budget $2.50" in plain(app.screen.query_one("#cost-meter", Static))
