"""lil-tui as a surface, in process through Textual's Pilot, on the scenario's own journal handle
(any backend: the app's model reads whatever journal it is given).

Read: the runs screen's status, steps, duration and cost cells of every run; each shown run's
screen (the header's status, steps and duration, the cost meter, every step row, and the
duration chart's total, which must be the header's duration); the effects, approvals and
splices screens' rows. Acts, as a person presses the keys: approve and reject (approvals
screen), resume (R), cancel (c), reset (x), retry (t), budget (b), fork (f on a step), resolve
(d on the effects screen), apply and reject a splice (a, r), and a refused resume (R on the
cancelled run), each journaled as ``who()`` and said in a notification."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from tests.matrix.build import Scenario
from tests.matrix.reading import Reading
from tests.tui.tui_helpers import plain, settle, until

SIZE = (220, 60)
DIALOGS = ("ConfirmScreen", "PromptScreen")
DURATION = r"-|\d+ms|\d+\.\d[smh]"


@asynccontextmanager
async def app_on(journal: Any) -> AsyncIterator[tuple[Any, Any]]:
    """lil-tui on ``journal``, under Pilot; its subscription closed after."""
    from letitloop.tui._app import LilApp
    from letitloop.tui._model import Model

    app = LilApp(model=Model(journal=journal))
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(app, pilot)
            yield app, pilot
    finally:
        app.model.close()


def _cells(table: Any, key: Any) -> list[str]:
    return [str(c) for c in table.get_row(key)]


def _column(table: Any, name: str) -> int:
    return [str(c.key.value) for c in table.ordered_columns].index(name)


async def read(journal: Any, truth_ids: list[str], shown: list[str]) -> Reading:
    """What lil-tui's screens show (``shown``: the runs opened on their own screen)."""
    from textual.widgets import DataTable

    from letitloop.tui._detail import DetailScreen

    async with app_on(journal) as (app, pilot):
        runs = app.screen.query_one("#runs", DataTable)
        await until(pilot, lambda: runs.row_count == len(truth_ids), timeout=30)
        table = {}
        for key in runs.rows:
            cells = _cells(runs, key)
            table[str(key.value)] = {
                k: cells[_column(runs, k)] for k in ("status", "steps", "duration", "cost")
            }
        pages = {}
        for run_id in shown:
            app.open_run(run_id)
            await until(pilot, partial(_showing, app, DetailScreen, run_id))
            pages[run_id] = _page(app.screen)
            app.pop_screen()
            await pilot.pause()
        rows = {}
        for key, screen_name in (("2", "approvals"), ("3", "effects"), ("4", "splices")):
            await pilot.press(key)
            await until(pilot, partial(_loaded, app, screen_name))
            await settle(app, pilot)
            screen = app.screen
            rows[screen_name] = list(screen.proposals if screen_name == "splices" else screen.rows)
    return Reading(
        table=table,
        texts={
            "run screens": pages,
            "effects screen": sorted((r.run_id, r.position, r.marker) for r in rows["effects"]),
            "approvals screen": sorted((r.id, r.run_id) for r in rows["approvals"]),
            "splices screen": sorted(
                (p.id, p.state) for p in rows["splices"] if p.state == "pending"
            ),
        },
    )


def _showing(app: Any, detail: Any, run_id: str) -> bool:
    """lil-tui shows ``run_id`` on its run screen (``detail``), loaded."""
    screen = app.screen
    return isinstance(screen, detail) and screen.run_id == run_id and screen.view is not None


def _loaded(app: Any, name: str) -> bool:
    screen = app.screen
    return type(screen).__name__.lower().startswith(name[:-1]) and bool(screen.loaded)


def _page(screen: Any) -> dict[str, Any]:
    """A run's screen: header, cost meter, step rows, the duration chart's total (or None)."""
    from textual.widgets import DataTable

    summary = plain(screen.query_one("#summary"))
    status = re.search(r"\s(\w+)\s+steps (\d+/\d+)", summary)
    duration = re.search(rf"duration ({DURATION})", summary)
    meter = plain(screen.query_one("#cost-meter")).strip().splitlines()[0]
    cost = re.match(r"cost (\$[\d,.]+)", meter)
    steps = screen.query_one("#steps", DataTable)
    step_rows = []
    for key in steps.rows:
        cells = _cells(steps, key)
        step_rows.append(
            {
                "position": int(cells[0]),
                "name": cells[1],
                "status": cells[2],
                "tries": int(cells[3]),
                "duration": cells[4],
                "cost": cells[5],
            }
        )
    caption = str(screen.query_one("#durations-caption").render())
    total = re.search(rf"total ({DURATION})", caption)
    return {
        "status": status[1] if status else summary[:200],
        "steps": status[2] if status else None,
        "duration": duration[1] if duration else None,
        "cost": cost[1] if cost else meter,
        "step rows": step_rows,
        "chart total": total[1] if total else None,
    }


def expected_texts(truth: Any, shown: list[str]) -> dict[str, Any]:
    pages = {}
    for run_id in shown:
        view = truth.views[run_id]
        run = view["run"]
        timed = [s for s in view["steps"] if s["seconds"]]
        pages[run_id] = {
            "status": run["status"],
            "steps": run["shown"]["steps"],
            "duration": run["shown"]["duration"],
            "cost": run["shown"]["cost"],
            "step rows": [
                {
                    "position": s["position"],
                    "name": s["name"] if s["kind"] == "step" else f"{s['name']} ({s['kind']})",
                    "status": s["status"],
                    "tries": s["tries"],
                    "duration": s["shown"]["duration"],
                    "cost": s["shown"]["cost"],
                }
                for s in view["steps"]
            ],
            # the chart's total is the run's duration, as its header says (never a sum that
            # counts a killed attempt as running until now)
            "chart total": run["shown"]["duration"] if len(timed) >= 2 else None,
        }
    return {
        "run screens": pages,
        "effects screen": sorted((d["run_id"], d["position"], d["marker"]) for d in truth.doubts),
        "approvals screen": sorted((a["id"], a["run_id"]) for a in truth.approvals),
        "splices screen": sorted(
            (p["id"], p["state"]) for p in truth.proposals if p["state"] == "pending"
        ),
    }


async def acts(s: Scenario) -> dict[str, str]:
    """Every action lil-tui offers, by its keys; each notification's sentence, normalized."""
    from letitloop.journal import who
    from tests.matrix.acts import Targets, expect, normal

    j, by = s.journal, who()
    forks = set(_forks(j))
    here = os.getcwd()
    os.chdir(s.project)  # lil-tui runs in the project: a resume it starts imports its code
    try:
        said = await _press(s)
    finally:
        os.chdir(here)
    message, _, fix = said["refused resume"].partition("\nfix: ")  # as a notification says it
    said["refused resume"] = f"error: {message}" + (f"\n  fix: {fix}" if fix else "")
    [fork] = set(_forks(j)) - forks  # lil-tui names its forks itself
    did = {"approve", "reject", "cancel", "reset", "retry", "budget", "resolve", "apply"}
    did |= {"reject splice", "fork"} | (set() if s.backend == "memory" else {"resume"})
    expect(s, "tui", by, did, fork=fork)
    said["fork"] = said["fork"].replace(fork, Targets("tui").fork)
    ids = (Targets("tui").proposal(s, "greet"), Targets("tui").proposal(s, "bye"))
    return {a: normal(s, text, "tui", by, ids) for a, text in said.items()}


async def _press(s: Scenario) -> dict[str, str]:
    """The keys of every action, on lil-tui's screens; the notification each one brought."""
    from textual.widgets import DataTable, Input

    from letitloop.tui._detail import DetailScreen
    from tests.matrix.acts import CANCELLED, COMPLETED, Targets

    j, t = s.journal, Targets("tui")
    said: dict[str, str] = {}
    async with app_on(j) as (app, pilot):
        said_by_app: list[str] = []  # every notification (Textual drops them when they expire)
        notify = app.notify

        def recording(message: Any, *args: Any, **kwargs: Any) -> None:
            said_by_app.append(str(message))
            notify(message, *args, **kwargs)

        app.notify = recording

        def notes() -> list[str]:
            return said_by_app

        async def keys(*pressed: str, answer: tuple[str, ...] | None = ()) -> str:
            """Press ``pressed``, answer the dialog it opens (``answer`` typed, then Enter;
            None: no dialog), and return the notification that follows."""
            before = len(notes())
            await pilot.press(*pressed)
            if answer is not None:
                await until(pilot, lambda: type(app.screen).__name__ in DIALOGS)
                fields = app.screen.query(Input)
                if fields:
                    fields.first().focus()
                    await pilot.pause()
                await pilot.press(*answer, "enter")
            try:
                await until(pilot, lambda: len(notes()) > before, timeout=30)
            except AssertionError:
                raise AssertionError(
                    f"no notification after {pressed} {answer}: {app.screen_stack}, {notes()}"
                ) from None
            await settle(app, pilot)
            return notes()[-1]

        async def on(screen: str, key: str, pick: Any) -> None:
            """Show a screen and put its cursor on the row ``pick`` chooses."""
            await pilot.press(key)
            await until(pilot, lambda: _loaded(app, screen))
            await settle(app, pilot)
            rows = list(app.screen.proposals if screen == "splices" else app.screen.rows)
            index = next(i for i, r in enumerate(rows) if pick(r))
            app.screen.query_one(f"#{screen}", DataTable).move_cursor(row=index, animate=False)
            await pilot.pause()

        async def run_row(run_id: str) -> None:
            await pilot.press("1")
            while isinstance(app.screen, DetailScreen):  # a resume opened its run's screen
                app.pop_screen()
                await pilot.pause()
            await until(pilot, lambda: type(app.screen).__name__ == "RunsScreen")
            table = app.screen.query_one("#runs", DataTable)
            await until(pilot, lambda: run_id in table.rows)
            table.move_cursor(row=table.get_row_index(run_id), animate=False)
            await pilot.pause()

        async def run_screen(run_id: str) -> None:
            app.open_run(run_id)
            await until(pilot, lambda: isinstance(app.screen, DetailScreen) and app.screen.view)

        await on("approvals", "2", lambda r: r.run_id == t.approve)
        said["approve"] = await keys("a")
        if s.backend != "memory":  # a resume is a new process: none sees a memory journal
            await run_row(t.approve)
            await pilot.press("R")
            completed = lambda: j.get_run(t.approve).run.status == "completed"  # noqa: E731
            await until(pilot, completed, timeout=90)
            assert app.resumes
        await on("approvals", "2", lambda r: r.run_id == t.reject)
        said["reject"] = await keys("r")
        await run_row(t.reject)
        said["cancel"] = await keys("c", answer=tuple("matrix says no"))
        await run_row(t.reject)
        said["reset"] = await keys("x")
        await run_row(t.dead)
        said["retry"] = await keys("t", answer=None)
        await run_row(t.dead)
        said["budget"] = await keys("b", answer=("2",))
        await run_screen(COMPLETED)
        steps = app.screen.query_one("#steps", DataTable)
        steps.move_cursor(row=steps.get_row_index("1"), animate=False)
        await pilot.pause()
        said["fork"] = await keys("f")
        await on("effects", "3", lambda r: r.run_id == t.effect)
        said["resolve"] = await keys("d")
        mine = str(s.project / "apps" / "tui.py")
        await on("splices", "4", lambda p: p.path == mine and p.target == "greet")
        said["apply"] = await keys("a")
        await on("splices", "4", lambda p: p.path == mine and p.target == "bye")
        said["reject splice"] = await keys("r")
        await run_screen(CANCELLED)
        resumes = len(app.resumes)
        said["refused resume"] = await keys("R", answer=None)
        assert len(app.resumes) == resumes, "lil-tui started a resume of a cancelled run"
    return said


def _forks(journal: Any) -> list[str]:
    return [r.run_id for r in journal.list_runs(workflow="flows.ok", limit=1 << 20) if "~" in r.key]
