"""Each compaction strategy on one fixed input: its plan is the golden file's, exactly.

The golden files (``tests/data/memory/<strategy>.json``) hold the messages and the report; a
change of behavior shows as a diff there. ``LIL_UPDATE_GOLDEN=1`` rewrites them (review the
diff before committing)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from letitloop.errors import ContextBudgetError
from letitloop.memory import (
    ESTIMATE,
    DropLowestPriority,
    SlidingWindow,
    Summarize,
    TruncateOldest,
    plan,
)
from letitloop.memory._compact import fill_summary, summary_prompt

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "memory"
BUDGET = 90


def items() -> list[dict[str, Any]]:
    """A pinned instruction, board entries of several priorities and a thread of turns."""
    raw = [
        ("text", "system", "You are the critic. Judge the draft against the brief.", 0, True),
        ("board:brief@1", "user", "Brief: a 300-word piece on otters for the newsletter.", 5, True),
        (
            "board:facts@2",
            "user",
            "Facts: otters hold hands while sleeping; they use tools; " * 2,
            1,
            False,
        ),
        ("board:style@1", "user", "Style: warm, short sentences, no jargon.", 3, False),
        (
            "thread:review@1",
            "assistant",
            "researcher: I found three sources on sea otters.",
            0,
            False,
        ),
        (
            "thread:review@2",
            "assistant",
            "writer: First draft. Otters are social animals that " * 3,
            0,
            False,
        ),
        ("thread:review@3", "assistant", "critic: Too long; cut the second paragraph.", 2, False),
        ("thread:review@4", "assistant", "writer: Second draft, shorter and warmer.", 4, False),
    ]
    return [
        {
            "id": f"{seq}:{source}",
            "source": source,
            "role": role,
            "content": content,
            "name": None,
            "priority": priority,
            "pinned": pinned,
            "seq": seq,
        }
        for seq, (source, role, content, priority, pinned) in enumerate(raw)
    ]


def summarizer(prompt: str) -> str:
    return "unused: the golden test fills a fixed summary"


STRATEGIES: dict[str, Any] = {
    "drop_lowest_priority": DropLowestPriority(),
    "truncate_oldest": TruncateOldest(),
    "sliding_window": SlidingWindow(),
    "sliding_window_1_turn": SlidingWindow(turns=1),
    "summarize": Summarize(model=summarizer, max_tokens=12),
}


def outcome(name: str) -> dict[str, Any]:
    strategy = STRATEGIES[name]
    planned = plan(items(), BUDGET, strategy, ESTIMATE)
    if planned["summarize"]:
        prompt = summary_prompt(items(), planned["summarize"], strategy)
        summary = "Three sources found; draft one was too long; draft two is shorter. " * 2
        planned = fill_summary(planned, items(), summary, strategy, ESTIMATE)
        planned["prompt"] = prompt
    return planned


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_each_strategy_plans_what_its_golden_file_holds(name: str) -> None:
    got = outcome(name)
    assert got == outcome(name)  # deterministic: the same input, the same plan
    report = got["report"]
    assert report["before"] > BUDGET >= report["after"]
    assert report["counter"] == "characters/4" and report["exact"] is False
    pinned = [i for i in report["items"] if i["pinned"]]
    assert pinned and all(i["action"] == "kept" for i in pinned)  # never dropped
    assert got["messages"][0]["content"].startswith("You are the critic")
    path = GOLDEN / f"{name}.json"
    if os.environ.get("LIL_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert json.loads(json.dumps(got)) == json.loads(path.read_text()), f"see {path}"


def test_the_strategies_differ_where_they_should() -> None:
    actions = {
        name: [i["action"] for i in outcome(name)["report"]["items"][:8]] for name in STRATEGIES
    }
    assert "cut" in actions["truncate_oldest"]
    assert actions["drop_lowest_priority"][2] == "dropped"  # the lowest priority goes first
    assert actions["sliding_window"][-1] == "kept"  # the newest turn stays
    assert actions["sliding_window"].count("kept") == 4  # 2 pinned + the 2 newest turns
    assert actions["sliding_window_1_turn"].count("kept") == 3  # 2 pinned + 1 turn
    assert "summarized" in actions["summarize"]
    assert outcome("summarize")["messages"][2]["content"].startswith("Summary of earlier")


def test_pinned_entries_over_the_budget_are_refused_with_the_numbers() -> None:
    with pytest.raises(ContextBudgetError) as refused:
        plan(items(), 20, DropLowestPriority(), ESTIMATE)
    err = refused.value
    assert (err.budget, err.needed) == (20, 36) and "characters/4" in err.counter
    assert "36 tokens" in str(err) and "budget of 20" in str(err) and "nothing was sent" in str(err)
