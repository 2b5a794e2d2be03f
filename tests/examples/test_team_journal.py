"""examples/team_journal: the example's own throwaway PostgreSQL (cluster.py), the report
SIGKILLed mid-run and taken over by `lil runs resume` in another process, `lil-tui` in a real
terminal (tmux) following it and approving with two keys, and JupyterLab's letitloop sidebar
following the team journal, each from the README's commands."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.examples.cookbook import ROOT, Example, killed, run_it
from tests.helpers import free_port


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    """The example, its server started by `python cluster.py start` (stopped by its `stop`)."""
    ex = Example("team_journal", tmp_path_factory.mktemp("team"))
    # the one change to the example: a free port (54329 may be taken on this machine)
    settings = ex.dir / "pyproject.toml"
    settings.write_text(settings.read_text().replace(":54329/", f":{free_port()}/"))
    assert run_it(ex.readme) == ["python cluster.py start", "python team.py"]
    state = ex.dir / ".letitloop" / "postgres.json"
    try:
        assert "PostgreSQL is running" in ex.ok("python cluster.py start", timeout=300)
        assert "already running" in ex.ok("python cluster.py start")
        yield ex
    finally:
        ex.close()
        base = json.loads(state.read_text())["base"] if state.exists() else None
        stopped = ex.run("python cluster.py stop")
        assert stopped.returncode == 0, stopped.stderr
    assert base is not None and "stopped and deleted" in stopped.stdout
    assert not Path(base).exists() and not state.exists()  # nothing left behind


def _close_journals() -> None:
    """Close this process's PostgreSQL journals (their listener threads), as tests/conftest."""
    from tests.conftest import _close_pg_journals

    _close_pg_journals("postgresql://")


@pytest.mark.slow  # with the module's PostgreSQL server: 20 to 40 s
def test_lil_tui_follows_a_crash_a_takeover_and_approves(team: Example) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "tui"))
    from test_tmux import Terminal

    ex = team
    env = {**ex.env, "TERM": "xterm-256color"}
    env.pop("TMUX", None)
    term = Terminal([f"cd {ex.dir} &&", "lil-tui"], env)  # `lil-tui` in this folder
    ex.documented("lil-tui")
    try:
        term.wait_for("0 of 0 runs", "q Quit", timeout=60)
        crashed = ex.run("python team.py --crash-at summarize")
        assert killed(crashed.returncode), crashed.stdout + crashed.stderr
        term.wait_for("report:week-49", "interrupted", timeout=30)  # pushed, not polled
        assert "report:week-49  report    interrupted" in ex.ok("lil runs list")

        resumed = ex.start("lil runs resume report:week-49")  # a teammate takes it over
        resumed.wait_for("is waiting")
        fetched = (ex.dir / "fetches.log").read_text().splitlines()
        assert fetched == [f"{r} week 49" for r in ("emea", "americas", "apac", "africa")]
        term.keys("2")
        term.wait_for("publish", "Revenue is up", timeout=30)
        term.keys("a")
        term.wait_for("Comment (optional)")
        term.keys("Enter")
        rc, out, err = resumed.finish()
        assert rc == 0, out + err
        assert "completed" in out
        assert (ex.dir / "published.txt").read_text() == (
            "week 49: Revenue is up in every region but apac.\n"
        )
        term.keys("1")
        term.wait_for("report:week-49", "completed", timeout=30)
        again = ex.ok("python team.py")  # a finished run: its result, nothing again
        assert "published week 49" in again
        assert (ex.dir / "fetches.log").read_text().splitlines() == fetched
        assert (ex.dir / "published.txt").read_text().count("week 49") == 1
    finally:
        term.close()
        _close_journals()


def _get(lab: dict[str, Any], path: str) -> Any:
    url = f"{lab['base']}/lil/api/{path}"
    req = urllib.request.Request(url, headers={"Authorization": f"token {lab['token']}"})
    with urllib.request.urlopen(req, timeout=30) as reply:
        return json.loads(reply.read())


@pytest.mark.slow  # JupyterLab and Chromium: about 20 s
def test_the_lab_follows_the_team_journal(team: Example, tmp_path: Path) -> None:
    """`jupyter lab` in the example's folder serves the PostgreSQL journal its pyproject.toml
    names: the server extension lists the team's runs, and the sidebar follows a new one."""
    from tests.helpers import chromium, jupyter_lab

    ex = team
    ex.documented("jupyter lab")
    ex.documented("python team.py --week 50")
    # no LIL_JOURNAL: the server finds the journal from its root directory, as `jupyter lab`
    # started in the folder does
    with jupyter_lab(ex.dir, None, state=tmp_path, extensions=True) as lab:
        try:
            runs = _get(lab, "runs")
        except urllib.error.HTTPError as exc:
            log = Path(lab["log"]).read_text()[-3000:]
            raise AssertionError(
                f"/lil/api/runs answered {exc.code}; the lab's log:\n{log}"
            ) from None
        shown = {r["run_id"] for r in runs["runs"]}
        assert "report:week-49" in shown, runs  # the run the other test made, from PostgreSQL
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.goto(f"{lab['base']}/lab?token={lab['token']}")
            tab = ".jp-SideBar .lm-TabBar-tab[data-id='letitloop-sidebar']"
            page.wait_for_selector(tab, timeout=90_000)
            page.locator(tab).click()
            page.locator("#letitloop-sidebar .lil-tab-runs").click()
            row = "#letitloop-sidebar .lil-run[data-run-id='report:week-50']"
            report = ex.start("python team.py --week 50")
            report.wait_for("is waiting")
            page.wait_for_selector(row, timeout=30_000)  # a run of another process
            page.wait_for_selector(
                f"{row} .lil-badge-suspended, {row} .lil-badge-running", timeout=30_000
            )
            pending = [a for a in _get(lab, "approvals?status=pending")["approvals"]]
            assert [a["run_id"] for a in pending] == ["report:week-50"]
            ex.ok("lil approvals approve ID", ID=pending[0]["id"])
            assert report.finish()[0] == 0
            page.wait_for_selector(f"{row} .lil-badge-completed", timeout=30_000)
    _close_journals()
