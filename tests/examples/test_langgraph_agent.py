"""examples/langgraph_agent: the thread SIGKILLed inside a tool resumes from its last checkpoint
in a fresh process; its history, a replay from an earlier checkpoint and a fork into a new
thread, each from the README's commands."""

from __future__ import annotations

from collections.abc import Callable

from tests.examples.cookbook import Example, killed, run_it

ANSWER = "answer: about 40 hours of walking (200 km at 5 km/h)"


def test_killed_in_a_tool_then_history_fork_and_replay(example: Callable[..., Example]) -> None:
    ex = example("langgraph_agent")
    assert run_it(ex.readme) == ["python agent.py", "python agent.py history"]

    crashed = ex.run("python agent.py --crash-at calc")
    assert killed(crashed.returncode) and "--crash-at calc: SIGKILL" in crashed.stdout
    assert "act:   search(" in crashed.stdout and "act:   calc(" not in crashed.stdout

    resumed = ex.ok("python agent.py")
    assert "resuming thread 'geneva' at 'act'" in resumed
    assert "search(" not in resumed  # the finished nodes did not run again
    assert "act:   calc('200 / 5') -> '40'" in resumed and ANSWER in resumed
    assert "model calls this process: 1" in resumed  # only the answer; 2 came from the journal

    again = ex.ok("python agent.py")
    assert "finished earlier" in again and "model calls this process: 0" in again

    history = ex.ok("python agent.py history").splitlines()
    steps = [line.split()[1] for line in history if line.startswith("step")]
    assert steps == ["5", "4", "3", "2", "1", "0", "-1"]
    assert "next act    assistant: CALL calc: 200 / 5" in history[2]

    forked = ex.ok('python agent.py fork "I walk 8 hours a day"')
    assert "forked thread geneva~" in forked and "at step 4" in forked
    assert "answer: about 5 days, walking 8 hours a day" in forked
    assert "the original thread still says: about 40 hours" in forked
    assert "model calls this process: 1" in forked and "act:" not in forked  # no tool again
    listed = ex.ok("lil runs list --workflow langgraph:walker")
    assert "langgraph:geneva " in listed and "langgraph:geneva~" in listed

    replayed = ex.ok("python agent.py replay 3")
    assert "replaying from step 3 (next: act)" in replayed
    assert "act:   calc(" in replayed and "search(" not in replayed and ANSWER in replayed
    newest = ex.ok("python agent.py history").splitlines()
    assert len(newest) > len(history)  # the replay's checkpoints came after the old ones
    shown = ex.ok("lil runs show langgraph:geneva")
    assert "checkpoint" in shown and "completed" in shown
