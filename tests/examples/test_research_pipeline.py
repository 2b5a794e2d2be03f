"""examples/research_pipeline: every policy, a SIGKILL inside a step and one during the approval
wait, a side effect in doubt, the budget stop and the cache, each from the README's commands."""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.examples.cookbook import Example, killed, run_it

APPROVE = "lil approvals approve 47bdef40ad"


def test_run_it_kill_it_in_a_step_and_while_it_waits(example: Callable[..., Example]) -> None:
    ex = example("research_pipeline")
    assert run_it(ex.readme) == ["python pipeline.py", APPROVE]

    crashed = ex.run("python pipeline.py --crash-at draft")
    assert killed(crashed.returncode) and "--crash-at draft: SIGKILL" in crashed.stdout

    waiting = ex.start("python pipeline.py")  # search replays, the draft runs again
    waiting.wait_for(f"`{APPROVE}`")
    waiting.kill()  # killed while it waits for the approval

    again = ex.start("python pipeline.py")
    again.wait_for(f"`{APPROVE}`")
    assert "approved 47bdef40ad" in ex.ok(APPROVE)
    rc, out, err = again.finish()
    assert rc == 0, out + err
    assert "published published/durable-agents.md" in out
    assert "model calls this process: 0" in out  # every step before the approval replayed
    lines = [re.sub(r"\s+", " ", line.strip()) for line in out.splitlines()]
    assert lines[lines.index("run research:e84f5a3aa98c614f completed") + 3 :] == [
        "step search attempt 1 completed",  # paid once
        "step draft attempt 1 started",  # the attempt in flight when the SIGKILL came
        "step draft attempt 2 failed transient",  # HTTP 429, retried
        "step draft attempt 3 failed invalid",  # one paragraph: rewritten with the critique
        "step draft attempt 4 completed",
        "step polish attempt 1 completed miss",
        "approval publish attempt 1 completed",
        "marker publish attempt 1 completed",
    ]
    post = (ex.dir / "published" / "durable-agents.md").read_text()
    assert post.startswith("# durable agents\n") and post.count("It really") == 3

    done = ex.ok("python pipeline.py")  # a finished run: its journaled result, nothing again
    assert "model calls this process: 0" in done and "published " not in done


def test_a_post_in_doubt_is_never_published_twice(example: Callable[..., Example]) -> None:
    ex = example("research_pipeline")
    first = ex.start('python pipeline.py "crash proof" --crash-at publish')
    first.wait_for("lil approvals approve 8ec5daee7d")
    assert "8ec5daee7d" in ex.ok("lil approvals list")
    ex.ok("lil approvals approve 8ec5daee7d")
    rc, out, _ = first.finish()
    assert killed(rc) and "--crash-at publish: SIGKILL" in out
    post = ex.dir / "published" / "crash-proof.md"
    assert post.exists()  # it happened, but the journal cannot know

    doubt = ex.run('python pipeline.py "crash proof"')
    assert doubt.returncode == 1
    assert "side effect 'publish' (position 4)" in doubt.stderr and "in doubt" in doubt.stderr
    assert "research:5d362d2fbcba7050" in ex.ok("lil effects list")
    post.unlink()  # were it published again, it would be back
    ex.ok("lil effects resolve research:5d362d2fbcba7050 publish --done")
    done = ex.ok('python pipeline.py "crash proof"')
    assert "run research:5d362d2fbcba7050 completed" in done and not post.exists()


def test_the_budget_suspends_the_run_and_a_raise_continues_it(
    example: Callable[..., Example],
) -> None:
    ex = example("research_pipeline")
    stopped = ex.run('RESEARCH_BUDGET_USD=0.0025 python pipeline.py "tight budget"')
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    assert "step 'polish' (position 2) would pass the budget" in stopped.stderr
    assert "run research:8dd4a52f540ab23f suspended" in stopped.stdout
    assert "polish" not in stopped.stdout.split("suspended", 1)[1]  # it never started
    raised = ex.ok("lil runs budget research:8dd4a52f540ab23f --usd 0.05")
    assert "budget of research:8dd4a52f540ab23f set to $0.05" in raised
    going = ex.start('python pipeline.py "tight budget"')
    going.wait_for("is waiting")  # past the budget, at the approval
    detail = ex.lil_json("runs", "show", "research:8dd4a52f540ab23f")
    names = [(a["name"], a["status"]) for a in detail["attempts"]]
    assert names.count(("search", "completed")) == 1 and ("polish", "completed") in names


def test_a_reset_run_takes_the_polish_from_the_cache(example: Callable[..., Example]) -> None:
    ex = example("research_pipeline")
    first = ex.start("python pipeline.py")
    first.wait_for(f"`{APPROVE}`")
    ex.ok(APPROVE)
    assert first.finish()[0] == 0
    ex.ok("lil runs reset research:e84f", answer="y\n")  # it asks first
    again = ex.start("python pipeline.py")
    again.wait_for("`lil approvals approve 2a89f0b0a0`")  # a new epoch asks again
    ex.ok("lil approvals approve 2a89f0b0a0")
    rc, out, err = again.finish()
    assert rc == 0, out + err
    assert re.search(r"polish\s+attempt 1 completed hit", out), out
    saved = re.search(r"saved by the cache: \$(\S+)", out)
    assert saved and float(saved.group(1)) > 0
    ex.ok("lil runs show research:e84f")
    ex.ok("lil report")
