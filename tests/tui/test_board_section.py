"""lil-tui's run screen shows the run's blackboard by key and version, and its agents' thread
as a conversation (handoffs marked with the next role)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from tui_helpers import settle, until

from letitloop import blackboard, durable
from letitloop.memory import agents, handoff
from letitloop.tui._app import LilApp
from letitloop.tui._detail import DetailScreen


def _team(journal: Path) -> str:
    @durable(journal=str(journal), name="tui_team", run_id="t1")
    def team() -> int:
        blackboard().put("brief", "otters", pinned=True)
        review = agents.thread("review")
        review.say("writer", "Draft 1 about otters")
        handoff(to="critic", note="draft ready", by="writer", thread=review)
        review.say("critic", "APPROVE")
        return len(review.turns())

    assert team() == 3
    return "tui_team:t1"


async def test_the_run_screen_shows_the_board_and_the_conversation(journal_path: Path) -> None:
    run_id = _team(journal_path)
    app = LilApp(journal_path)
    async with app.run_test(size=(180, 60)) as pilot:
        await settle(app, pilot)
        app.open_run(run_id)
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        pane = screen.query_one("#attempt", Static)

        def shown() -> str:
            from rich.console import Console

            console = Console(width=170, record=True)
            console.print(pane.content)
            return console.export_text()

        await until(pilot, lambda: "conversation review" in shown())
        text = shown()
    assert "brief  v1 pinned" in text and "thread/review  v3" in text
    assert "conversation review (3 turns)" in text
    lines = [line.strip() for line in text.splitlines()]
    start = lines.index("conversation review (3 turns)")
    assert lines[start + 1 : start + 4] == [
        "1  writer: Draft 1 about otters",
        "2  writer → critic: draft ready",
        "3  critic: APPROVE",
    ]
