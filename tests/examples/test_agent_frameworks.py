"""examples/smolagents_agent, crewai_crew and autogen_team, each in its framework's environment
(``make adapters``): SIGKILLed mid-run and resumed with only the call in flight asked again,
then SIGKILLed inside the side effect's marker, resolved as done and finished without a repeat."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.adapters.conftest import framework_python
from tests.examples.cookbook import Example, killed, run_it


def _example(example: Callable[..., Example], name: str, tmp_path: Path) -> Example:
    home = tmp_path / "home"  # frameworks write caches and settings under $HOME
    return example(
        name,
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        HF_HUB_OFFLINE="1",
    )


# (folder, framework, script, crash point mid-run, model calls uninterrupted, effect file,
#  the marker's run and name, the resumed run's output)
CASES = [
    pytest.param(
        "smolagents_agent",
        "smolagents",
        "agent.py",
        "final",
        3,
        ("outbox.txt", "e-mails in outbox.txt"),
        "lil effects resolve smolagents:CodeAgent:ops-mail send_email --done",
        "answer: Paris has 20 arrondissements (sent to ops@example.com)",
        id="smolagents",
    ),
    pytest.param(
        "crewai_crew",
        "crewai",
        "crew.py",
        "write",
        3,
        ("notes.txt", "notes in notes.txt"),
        "lil effects resolve crewai:crew:poem send_note --done",
        "poem: two otters, hand in hand",
        id="crewai",
    ),
    pytest.param(
        "autogen_team",
        "autogen",
        "team.py",
        "review",
        4,
        ("published.txt", "haiku in published.txt"),
        "lil effects resolve autogen:RoundRobinGroupChat.tool:haiku.0.1 publish --done",
        "last word: APPROVE",
        id="autogen",
    ),
]


@pytest.mark.slow  # three frameworks, six processes each: about a minute in all
@pytest.mark.parametrize(
    ("folder", "framework", "script", "point", "calls", "effect", "resolve", "answer"), CASES
)
def test_killed_mid_run_and_inside_the_side_effect(
    example: Callable[..., Example],
    tmp_path: Path,
    folder: str,
    framework: str,
    script: str,
    point: str,
    calls: int,
    effect: tuple[str, str],
    resolve: str,
    answer: str,
) -> None:
    framework_python(framework)  # a missing environment fails with `make adapters`, not a skip
    ex = _example(example, folder, tmp_path / "mid-run")
    run = f"../../.venvs/{framework}/bin/python {script}"
    assert run_it(ex.readme) == ["make -C ../.. adapters", run]
    effect_file, effect_line = effect

    crashed = ex.run(f"{run} --crash-at {point}")
    assert killed(crashed.returncode), crashed.stdout + crashed.stderr
    assert f"--crash-at {point}: SIGKILL" in crashed.stdout
    before = crashed.stdout.count("  model: ")
    assert before == calls - 1  # every call but the one killed in flight
    resumed = ex.ok(run)
    assert answer in resumed and "model calls this process: 1" in resumed
    assert "  tool: " not in resumed  # the tool calls replayed from the journal
    assert f"{effect_line}: 1" in resumed
    again = ex.ok(run)  # a finished run: its journaled result
    assert answer in again and "model calls this process: 0" in again

    ex = _example(example, folder, tmp_path / "in-doubt")
    in_tool = {"agent.py": "email", "crew.py": "note", "team.py": "publish"}[script]
    crashed = ex.run(f"{run} --crash-at {in_tool}")
    assert killed(crashed.returncode), crashed.stdout + crashed.stderr
    assert len((ex.dir / effect_file).read_text().splitlines()) == 1  # it happened
    doubt = ex.run(run)
    assert doubt.returncode == 1 and "is in doubt" in doubt.stderr, doubt.stderr[-3000:]
    assert f"`{resolve}`" in doubt.stderr  # the fix names the README's command
    ex.ok(resolve)
    done = ex.ok(run)
    assert answer in done and f"{effect_line}: 1" in done  # never twice
