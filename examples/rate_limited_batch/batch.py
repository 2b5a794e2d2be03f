"""A batch of model calls split across processes that share one rate limit, with notifications.

    python batch.py [--processes N] [--crash-at TICKET]

It starts N processes (default 3), each a durable run ``triage`` over its share of 90 support
tickets: one model call per ticket, each a step with ``limit="fake:model"`` (600 requests a
minute, declared in this folder's pyproject.toml). The journal's owner process keeps one bucket
for all of them, so together they send a burst of 60 and then 10 a second, however many
processes there are. A shard that found tickets asking for a refund asks a person to approve
the refunds without waiting (``wait=False``): its run is suspended, and the owner posts an
``approval_waiting`` notification to receiver.py. Once approved, run the batch again: the
finished shards return their journaled results, the suspended one issues the refunds (once).

Every real model call appends a line (its time, process and ticket) to calls.log, from which
the batch prints how many calls were made in each second.

--crash-at TICKET SIGKILLs the process that handles TICKET inside its model call.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# the secret the owner process signs notifications with: it reads the environment of the
# process that starts it, so set it before the journal is first used (in real life, export
# it from your secret store)
os.environ.setdefault("LIL_NOTIFY_SECRET", "cookbook-example-secret")

from letitloop import ApprovalPending, approval, atomic_marker, durable, step
from letitloop.testing import FakeLLM

HERE = Path(__file__).resolve().parent
CALLS = HERE / "calls.log"
REFUNDS = HERE / "refunds.txt"
TICKETS = 90
ASKS_FOR_REFUND = {7, 31, 64}  # all three fall to the second of three processes
CRASH_AT = int(sys.argv[sys.argv.index("--crash-at") + 1]) if "--crash-at" in sys.argv else -1
llm = FakeLLM()


def ticket(i: int) -> str:
    wants = "a refund of $25" if i in ASKS_FOR_REFUND else "a question"
    return f"ticket {i}: a customer with {wants}"


def summarize(i: int) -> object:
    """One model call, logged (time, pid, ticket) so that the batch can show the rate."""
    with CALLS.open("a", encoding="utf-8") as f:
        f.write(f"{time.time():.3f} {os.getpid()} {i}\n")
    if i == CRASH_AT:
        print(f"--crash-at {i}: SIGKILL", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    return llm.complete(f"Summarize: {ticket(i)}")


def issue_refunds(tickets: list[int]) -> None:
    with REFUNDS.open("a", encoding="utf-8") as f:
        f.writelines(f"refund $25 for ticket {t}\n" for t in tickets)


@durable(name="triage", run_id="shard-{shard}-of-{shards}")
def triage(shard: int, shards: int) -> str:
    mine = [i for i in range(TICKETS) if i % shards == shard]
    for i in mine:
        step("summarize", summarize, i, limit="fake:model")
    refunds = [i for i in mine if i in ASKS_FOR_REFUND]
    if refunds:
        payload = {"tickets": refunds, "usd": 25 * len(refunds)}
        if approval("refunds", payload, wait=False).approved:
            with atomic_marker("issue_refunds") as should_execute:
                if should_execute:
                    issue_refunds(refunds)
    return f"{len(mine)} tickets, {len(refunds)} refunds"


def one_shard(spec: str) -> int:
    shard, shards = (int(x) for x in spec.split("/"))
    try:
        print(f"shard {spec}: completed ({triage(shard, shards)})", flush=True)
    except ApprovalPending as waiting:
        print(
            f"shard {spec}: waiting for approval {waiting.approval_id} "
            f"(lil approvals approve {waiting.approval_id})",
            flush=True,
        )
        return 3
    return 0


def rate(since: float) -> str:
    """Model calls per second (of this batch) since the first one."""
    lines = CALLS.read_text().splitlines() if CALLS.exists() else []
    times = sorted(t for t in (float(line.split()[0]) for line in lines) if t >= since)
    if not times:
        return "no model calls this time (every step came from the journal)"
    per_second = [0] * (int(times[-1] - times[0]) + 1)
    for t in times:
        per_second[int(t - times[0])] += 1
    return f"{len(times)} model calls, per second: {' '.join(map(str, per_second))}"


def main() -> int:
    if "--shard" in sys.argv:
        return one_shard(sys.argv[sys.argv.index("--shard") + 1])
    n = int(sys.argv[sys.argv.index("--processes") + 1]) if "--processes" in sys.argv else 3
    crash = ["--crash-at", str(CRASH_AT)] if CRASH_AT >= 0 else []
    started = time.time()
    procs = [
        subprocess.Popen([sys.executable, __file__, "--shard", f"{i}/{n}", *crash])
        for i in range(n)
    ]
    codes = [p.wait() for p in procs]
    for i, code in enumerate(codes):
        if code < 0:
            print(f"shard {i}/{n}: killed by {signal.Signals(-code).name}; run the batch again")
    print(rate(started))
    return 0 if set(codes) == {0} else 3 if set(codes) <= {0, 3} else 1


if __name__ == "__main__":
    sys.exit(main())
