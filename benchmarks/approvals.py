"""Benchmark: how fast a waiting workflow is released once someone decides its approval.

    python benchmarks/approvals.py [--rounds 15]

A workflow process blocks in ``approval()``; this process decides it through the journal (what
``lil approvals approve`` does, minus the CLI's start-up) and the workflow records the time it
got the decision back. Reported: the median and worst release latency (decision journaled ->
workflow running again), and the same for a decision made by a separate ``lil`` process
(including its interpreter start), next to the fsync floor of the disk for scale.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORKER = """
import sys, time
from letitloop import approval, durable
@durable(run_id=sys.argv[1])
def wait():
    approval("go", {"round": sys.argv[1]})
    return time.time()
print(wait(), flush=True)
"""


def fsync_floor(directory: Path, n: int = 50) -> float:
    path = directory / "probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    times = []
    for _ in range(n):
        t = time.perf_counter()
        os.write(fd, b"x" * 200)
        os.fdatasync(fd)
        times.append(time.perf_counter() - t)
    os.close(fd)
    return statistics.median(times)


def one_round(journal_path: Path, env: dict[str, str], run: str, via_cli: bool) -> float:
    from letitloop import open_journal

    journal = open_journal(journal_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, run], env=env, stdout=subprocess.PIPE, text=True
    )
    while not (rows := journal.approvals(status="pending")):
        time.sleep(0.005)
    time.sleep(0.05)  # the worker is now waiting on the journal's push
    if via_cli:
        subprocess.run(
            [sys.executable, "-m", "letitloop", "approvals", "approve", rows[0].id],
            env=env,
            check=True,
            capture_output=True,
        )
    else:
        journal.decide_approval(rows[0].id, approved=True, by="bench")
    out, _ = proc.communicate(timeout=60)
    decided_at = journal.approvals(status="approved", run_id=rows[0].run_id)[0].decided_at
    assert decided_at is not None
    return float(out.split()[-1]) - decided_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(
        dir=REPO / ".bench" if (REPO / ".bench").exists() else None
    ) as tmp:
        journal_path = Path(tmp) / "journal.duckdb"
        env = {**os.environ, "PYTHONPATH": str(REPO), "LIL_JOURNAL": str(journal_path)}
        env["LIL_KEY_DIR"] = tmp
        os.environ.update(LIL_KEY_DIR=tmp)
        floor = fsync_floor(Path(tmp))
        lib = [one_round(journal_path, env, f"lib-{i}", False) for i in range(args.rounds)]
        cli = [
            one_round(journal_path, env, f"cli-{i}", True) for i in range(max(3, args.rounds // 3))
        ]
        from letitloop.journal.duckdb._client import stop_owner

        stop_owner(journal_path)
    ms = 1000.0
    print(f"fsync floor (200 B + fdatasync): {floor * ms:.2f} ms")
    print(
        f"release after a decision through the journal: median "
        f"{statistics.median(lib) * ms:.1f} ms,"
        f" worst {max(lib) * ms:.1f} ms ({len(lib)} rounds)"
    )
    print(
        f"release after `lil approvals approve` (decision to release): median "
        f"{statistics.median(cli) * ms:.1f} ms, worst {max(cli) * ms:.1f} ms ({len(cli)} rounds)"
    )
    print("bar: released within 1 s of the decision")


if __name__ == "__main__":
    main()
