"""An action an agent took over MCP is shown with the client's name where a person looks: the
run's event log in lil-tui (a real owner, the real app under Pilot) and ``lil runs show``."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.widgets import RichLog

from tests.mcp.mcp_helpers import CLIENT, call, lil, stdio_session

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))

BY = f"mcp:{CLIENT.name}/{CLIENT.version}"


async def test_an_agents_cancel_is_shown_with_its_name_in_lil_tui(duck_project: Path) -> None:
    from tui_helpers import settle

    from letitloop.tui._app import LilApp

    async with stdio_session(duck_project) as s:
        done = await call(s, "cancel_run", {"run": "flows.broken:b", "reason": "wrong input"})
    assert done["by"] == BY
    assert (
        f"cancelled by {BY}: wrong input"
        in lil(duck_project, "runs", "show", "flows.broken:b").stdout
    )

    app = LilApp(duck_project / ".letitloop" / "journal.duckdb")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.open_run("flows.broken:b")
        await settle(app, pilot)
        lines = [line.text for line in app.screen.query_one("#events", RichLog).lines]
    said = [line for line in lines if "cancel" in line]
    assert said and BY in said[-1] and "wrong input" in said[-1], lines
