"""Benchmark: step.map on Dask against plain Dask on the same LocalCluster, and re-attach cost.

    python benchmarks/fanout.py [--items 1000] [--ms 10] [--rounds 3] [--cluster both|tls|tcp]

Each cluster is 2 worker processes (1 thread each) serving both sides, so both pay the same
scheduler and the same cores. Two clusters, measured in one run, rounds interleaved (the order
alternates):
- ``tls``: the cluster ``DaskExecutor()`` starts (TLS with temporary credentials, no dashboard:
  what a user gets);
- ``tcp``: a plain ``LocalCluster`` (no TLS) given as ``DaskExecutor(client)``.
Reported per cluster, as medians over rounds:
- plain ``client.map(fn, items)`` + ``client.gather`` of ITEMS tasks that sleep MS ms;
- ``step.map`` of the same function inside a ``@durable`` workflow on a DuckDB journal (each
  item a child run journaled by the worker), and the ratio to plain Dask (bar, issue #34: <= 1.3x);
- re-attach (on the tcp cluster, which another process of the user can reach by its address):
  a parent whose map finished half of its items is called again (what a killed orchestrator's
  restart does): the time until the map is running its first new item again, i.e. the journal
  read that finds the finished half (bar: <= 1 s), and the whole rerun against the ideal of
  running only the unfinished half.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def sleepy(ms: float, i: int) -> int:
    time.sleep(ms / 1000)
    return i


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--ms", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cluster", choices=("both", "tls", "tcp"), default="both")
    args = parser.parse_args()

    import functools

    import distributed

    from letitloop import durable, step
    from letitloop.distributed import DaskExecutor
    from letitloop.journal.duckdb._client import stop_owner

    tmp = Path(tempfile.mkdtemp(prefix="lil-bench-dist-"))
    journal = tmp / "journal.duckdb"
    kinds = ("tls", "tcp") if args.cluster == "both" else (args.cluster,)
    executors: dict[str, Any] = {}
    closers: list[Any] = []
    for kind in kinds:
        if kind == "tls":
            executors[kind] = DaskExecutor(n_workers=2, threads_per_worker=1)
        else:
            cluster = distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = distributed.Client(cluster)
            executors[kind] = DaskExecutor(client)
            closers += [client, cluster]
    fn = functools.partial(sleepy, args.ms)
    items = list(range(args.items))

    plain: dict[str, list[float]] = {k: [] for k in kinds}
    ours: dict[str, list[float]] = {k: [] for k in kinds}
    rerun, first_new = [], []
    for r in range(args.rounds):
        for kind in kinds if r % 2 == 0 else kinds[::-1]:  # neither always goes first
            executor = executors[kind]
            client = executor.client
            t = time.perf_counter()
            futures = client.map(fn, items, pure=False)
            assert client.gather(futures) == items
            plain[kind].append(time.perf_counter() - t)

            @durable(journal=str(journal), run_id=f"{kind}-round{r}", name="bench_map")
            def whole(on: Any = executor) -> list[int]:
                return step.map("sleepy", fn, items, on=on)

            t = time.perf_counter()
            assert whole() == items
            ours[kind].append(time.perf_counter() - t)

        if "tcp" in kinds:  # re-attach: an orchestrator killed with half of its items journaled
            executor = executors["tcp"]
            address = executor.client.scheduler.address
            first, total = reattach_once(journal, r, args, address, executor)
            first_new.append(first)
            rerun.append(total)

    print(f"items={args.items} x {args.ms} ms, 2 workers x 1 thread, rounds={args.rounds}")
    for kind in kinds:
        base, mine = statistics.median(plain[kind]), statistics.median(ours[kind])
        print(f"[{kind}] plain dask client.map      median {base * 1000:8.1f} ms")
        print(
            f"[{kind}] step.map (journaled)       median {mine * 1000:8.1f} ms"
            f"   ratio {mine / base:.2f}x (bar <= 1.3x)"
        )
    if rerun:
        half_ideal = statistics.median(plain["tcp"]) / 2
        print(
            f"re-attach at 50%: finished half found in {statistics.median(first_new) * 1000:.1f}"
            f" ms (bar <= 1000 ms); whole rerun {statistics.median(rerun) * 1000:.1f} ms against "
            f"{half_ideal * 1000:.1f} ms for the unfinished half on plain dask"
        )
    for executor in executors.values():
        executor.close()
    for closer in closers:
        closer.close()
    stop_owner(journal)


ORCHESTRATOR = """
import functools, sys, time
from letitloop import durable, step
from letitloop.distributed import DaskExecutor

def sleepy(ms, i):
    time.sleep(ms / 1000)
    return i

journal, run, n, ms, address = sys.argv[1:6]

@durable(journal=journal, run_id=run, name="bench_reattach")
def fan(n):
    return step.map("sleepy", functools.partial(sleepy, float(ms)), range(n),
                    on=DaskExecutor(address))

fan(int(n))
"""


def reattach_once(
    journal: Path, r: int, args: argparse.Namespace, address: str, executor: object
) -> tuple[float, float]:
    """SIGKILL an orchestrator once half of its items are journaled; call the run again here.

    Returns the seconds until the map submits its first unfinished item, and the whole rerun."""
    import functools
    import os
    import signal
    import subprocess

    from letitloop import durable, open_journal, step
    from letitloop.kernel import _fanout

    run = f"reattach{r}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            ORCHESTRATOR,
            str(journal),
            run,
            str(args.items),
            str(args.ms),
            address,
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    j = open_journal(journal)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        done = j.list_runs(workflow="bench_reattach.sleepy", status="completed", limit=10**6)
        if len([x for x in done if x.run_id.startswith(f"bench_reattach.sleepy:{run}.")]) >= (
            args.items // 2
        ):
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    @durable(journal=str(journal), run_id=run, name="bench_reattach")
    def fan(n: int) -> list[int]:
        return step.map(
            "sleepy",
            functools.partial(sleepy, args.ms),
            range(n),
            on=executor,  # type: ignore[arg-type]
        )

    marks: list[float] = []
    real_submit = _fanout._submit_all

    def timed_submit(*a: object, **k: object) -> None:
        marks.append(time.perf_counter())
        real_submit(*a, **k)  # type: ignore[arg-type]

    _fanout._submit_all = timed_submit  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        assert fan(args.items) == list(range(args.items))
        ended = time.perf_counter()
    finally:
        _fanout._submit_all = real_submit
    return marks[0] - started, ended - started


if __name__ == "__main__":
    main()
