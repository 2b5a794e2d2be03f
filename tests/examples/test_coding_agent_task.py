"""examples/coding_agent_task: `lil run --task` with a stand-in agent on a scratch git project:
the runner SIGKILLed by the agent halfway through its edit continues from the tree the attempt
began with, the failed tests become the critique, `--review` waits for the splice to be applied,
and the signed receipt verifies; a forged one and a changed signature do not."""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.examples.cookbook import Example, killed, run_it

KEY = "cookbook-test-receipt-key-0123456789abcdef"
TASK = "lil run --task calc --root work --review"


def test_killed_runner_critique_review_and_a_verified_receipt(
    example: Callable[..., Example],
) -> None:
    ex = example("coding_agent_task", LIL_RECEIPT_KEY=KEY)
    assert run_it(ex.readme) == ["python new_project.py", TASK]
    assert "work/ is a git repository" in ex.ok("python new_project.py")

    crashed = ex.run(f"AGENT_KILL_RUNNER=1 {TASK}")
    assert killed(crashed.returncode), crashed.stdout + crashed.stderr
    assert "stand-in: SIGKILL of the runner" not in crashed.stdout  # the agent's own output
    half = (ex.dir / "work" / "src" / "calc.py").read_text()
    assert "raise NotImplementedError" not in half and "return a - b\n\n\ndef sub" not in half

    waiting = ex.run(TASK)
    assert waiting.returncode == 3, waiting.stdout + waiting.stderr  # waits for review
    progress = waiting.stderr
    assert "the interrupted attempt's edits were undone (1 file(s))" in progress
    assert "stand-in: failed tests" in progress  # a - b: the tests fail
    assert "stand-in: attempt 2 (with a critique)" in progress  # the killed one is not counted
    assert "stand-in: checks passed" in progress
    proposal = re.search(r"review of 1 splice proposal\(s\): (\w+)", waiting.stdout)
    assert proposal, waiting.stdout
    calc = (ex.dir / "work" / "src" / "calc.py").read_text()
    assert "raise NotImplementedError" in calc  # put back until a person applies the edit

    shown = ex.ok("lil splice show ID", ID=proposal.group(1))
    assert "+    return a + b" in shown and "-    raise NotImplementedError" in shown
    ex.ok("lil splice apply ID", ID=proposal.group(1))
    done = ex.ok("lil run resume calc")
    assert "task calc done by stand-in in 2 attempt(s)" in done
    assert "✓ tests" in done and "✓ protected signatures" in done
    assert "return a + b" in (ex.dir / "work" / "src" / "calc.py").read_text()

    verified = ex.ok("cd work && lil receipt verify build/receipt.json")
    assert "receipt verified" in verified
    assert "tests: 2 total, 2 passed, 0 failed" in verified
    assert "protected:src/calc.py::add: unchanged" in verified

    shown = ex.ok("lil run show calc --diff")
    assert "started" in shown and "rejected" in shown and "accepted" in shown
    assert "add(2, 3) returned -1" in shown  # the critique the second attempt got

    receipt = ex.dir / "work" / "build" / "receipt.json"
    genuine = receipt.read_text()
    verify = "lil receipt verify build/receipt.json"
    ex.ok("""sed -i 's/"exit_code": 0/"exit_code": 1/' build/receipt.json""", cwd="work")
    forged = ex.run(verify, cwd="work")
    assert forged.returncode == 1 and "REJECTED" in forged.stdout
    assert "payload.exit_code" in forged.stdout
    receipt.write_text(genuine)
    assert ex.run(verify, cwd="work", env={"LIL_RECEIPT_KEY": KEY[::-1]}).returncode == 1
    source = ex.dir / "work" / "src" / "calc.py"  # a third parameter for add
    source.write_text(source.read_text().replace("b: int)", "b: int, c: int = 0)", 1))
    changed = ex.run(verify, cwd="work")
    assert changed.returncode == 1 and "FAIL protected:src/calc.py::add" in changed.stdout
