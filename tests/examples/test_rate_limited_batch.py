"""examples/rate_limited_batch: three real processes share one limit (checked on the time of
every call they made), one of them SIGKILLed at the ticket the README names and resumed; the
owner posts a signed approval_waiting webhook to the example's own receiver, which verifies it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.examples.cookbook import Example, run_it
from tests.helpers import free_port, wait_until

BURST, PER_SECOND = 60, 10  # rpm = 600: a tenth of the minute at once, then 10 a second


def _within_the_limit(times: list[float]) -> None:
    """In any interval [a, b] of the calls' times, at most BURST + PER_SECOND * (b - a) calls
    (and 2 more for the clocks of separate processes)."""
    times = sorted(times)
    for i, start in enumerate(times):
        for j in range(i, len(times)):
            allowed = BURST + PER_SECOND * (times[j] - start) + 2
            assert j - i + 1 <= allowed, (j - i + 1, times[j] - start, times)


def test_three_processes_one_limit_a_kill_and_a_webhook(example: Callable[..., Example]) -> None:
    ex = example("rate_limited_batch")
    assert run_it(ex.readme) == ["python receiver.py", "python batch.py"]
    # the one change to the example: a free port for its receiver (8765 may be taken here)
    settings = ex.dir / "pyproject.toml"
    settings.write_text(settings.read_text().replace(":8765/", f":{free_port()}/"))

    receiver = ex.start("python receiver.py")
    receiver.wait_for("listening on http://127.0.0.1:")

    crashed = ex.run("python batch.py --crash-at 40")
    assert crashed.returncode == 1, crashed.stdout + crashed.stderr
    assert "--crash-at 40: SIGKILL" in crashed.stdout
    assert "shard 1/3: killed by SIGKILL; run the batch again" in crashed.stdout
    assert "shard 0/3: completed (30 tickets, 0 refunds)" in crashed.stdout
    assert "shard 2/3: completed (30 tickets, 0 refunds)" in crashed.stdout

    resumed = ex.run("python batch.py")
    assert resumed.returncode == 3, resumed.stdout + resumed.stderr
    waiting = re.search(r"shard 1/3: waiting for approval (\w+)", resumed.stdout)
    assert waiting, resumed.stdout
    assert "17 model calls" in resumed.stdout  # tickets 40, 43 .. 88 of shard 1, 40 again

    calls = [line.split() for line in (ex.dir / "calls.log").read_text().splitlines()]
    tickets = [int(c[2]) for c in calls]
    assert sorted(tickets) == sorted([*range(90), 40])  # each once, the one killed twice
    assert len({c[1] for c in calls}) == 4  # three processes, and the one that resumed shard 1
    _within_the_limit([float(c[0]) for c in calls])

    receiver.wait_for("[approval_waiting] letitloop: approval waiting in run triage:shard-1-of-3")
    notes = (ex.dir / "notifications.jsonl").read_text().splitlines()
    assert [json.loads(n)["event"] for n in notes] == ["approval_waiting"]
    assert "bad or missing signature" not in receiver.output()

    def delivered() -> str | None:
        listed = ex.ok("lil notify list")
        return listed if "delivered" in listed else None

    listed = wait_until(delivered, 30, what=lambda: ex.ok("lil notify list"), interval=0.2)
    assert "approval_waiting" in listed and "triage:shard-1-of-3" in listed

    ex.ok("lil approvals approve ID", ID=waiting.group(1))
    done = ex.ok("python batch.py")
    assert "shard 1/3: completed (30 tickets, 3 refunds)" in done
    assert "no model calls this time" in done
    refunds = (ex.dir / "refunds.txt").read_text().splitlines()
    assert refunds == [f"refund $25 for ticket {t}" for t in (7, 31, 64)]
    ex.ok("python batch.py")
    assert (ex.dir / "refunds.txt").read_text().splitlines() == refunds  # once
    assert "fake:model  600" in ex.ok("lil limits")
    ex.ok("lil runs show triage:shard-1-of-3")
