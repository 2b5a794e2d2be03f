"""examples/agent_memory: agents on one blackboard, killed in the critic's model call after a
summary was written and resumed from the README's commands: the same board and thread, one
model call (the one in flight), the summarizer not asked again; the conversation shown by
``lil runs show``."""

from __future__ import annotations

from collections.abc import Callable

from tests.examples.cookbook import Example, killed, run_it

APPROVE = "lil approvals approve 28bc7a4467"
THREAD = [
    "1 researcher facts are on the board",
    "2 writer Draft 1: otters hold hands while they sleep and crack urchins on rocks.",
    "3 critic Too plain: add one surprising fact.",
    "4 writer Draft 2: otters hold hands asleep, and their fur is the densest of any animal.",
    "5 critic APPROVE: warm, short, surprising.",
]


def test_killed_mid_conversation_it_resumes_with_its_memory(
    example: Callable[..., Example],
) -> None:
    ex = example("agent_memory")
    assert run_it(ex.readme) == ["python pipeline.py", APPROVE]

    crashed = ex.run("python pipeline.py --crash-at critique")
    assert killed(crashed.returncode) and "--crash-at critique: SIGKILL" in crashed.stdout
    before = ex.ok("lil runs show newsletter:otters")
    assert "summary/critique-2" in before and "conversation 'review' (4 turns)" in before

    waiting = ex.start("python pipeline.py")
    waiting.wait_for(f"`{APPROVE}`")
    assert "approved 28bc7a4467" in ex.ok(APPROVE)
    rc, out, err = waiting.finish()
    assert rc == 0, out + err
    assert "published published/otters.md (draft v2)" in out
    assert "model calls this process: 1" in out  # only the critic's call that was in flight
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert lines[lines.index(THREAD[0]) :][:5] == THREAD

    shown = ex.ok("lil runs show newsletter:otters")
    assert "conversation 'review' (5 turns)" in shown
    assert shown.count("summarize critique-2") == 1  # asked once, across the crash
    assert "brief (pinned)" in shown and "researcher → writer: facts are on the board" in shown
    post = (ex.dir / "published" / "otters.md").read_text()
    assert post.startswith("# otters\n") and "densest" in post

    done = ex.ok("python pipeline.py")  # a finished run: its journaled result, nothing again
    assert "model calls this process: 0" in done and "published " not in done
