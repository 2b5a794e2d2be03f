"""Queued runs on PostgreSQL against DBOS queues, on the same server, in the same run.

    python benchmarks/queues.py [--quick] [--json OUT] [--dsn postgresql://...]

On one PostgreSQL server (a throwaway cluster from ``tests/pg_cluster.py``, fsync and
synchronous_commit on, or ``--dsn`` / ``LIL_TEST_PG_DSN``), each system in a database of its own:

- letitloop: ``lil worker`` processes on a PostgreSQL journal (and, for reference, on a DuckDB
  journal on the local disk, whose owner is the queue);
- DBOS (``.venvs/peers-dbos``, pinned in ``benchmarks/peers/dbos.txt``): worker processes that
  launch DBOS and listen on a queue registered with ``worker_concurrency``, polling it every
  1 s (DBOS's default) and every 0.01 s (tuned for latency).

Two figures, each system measured in turn within every round (rounds interleave the systems, so
a noisy spell hits all alike); medians over the rounds:

- throughput: W idle workers, each running up to C runs at once; another process enqueues N
  runs of three small steps in a burst (one enqueue call each, as an application would); runs
  completed per second from the first enqueue to the last completion (the enqueue's own time
  is reported beside it);
- claim latency with idle workers: the same workers; one run enqueued at a time, 0.1-0.3 s
  after the previous one finished (the workers are idle again); the time from the enqueue call
  to the start of the run's first step (one clock: both processes on this machine).

Bars: letitloop's throughput at least DBOS's (its best setting), claim latency under 50 ms.
The script also runs as its own helper (``--lil-enqueue``, ``--dbos-worker``, ``--dbos-enqueue``,
started in the right interpreter): those modes are internal.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
DBOS_PYTHON = REPO / ".venvs" / "peers-dbos" / "bin" / "python"
BARS = {"latency_ms": 50.0}
SMALL = "0123456789abcdefghij"

LIL_FLOW = f'''
import time
from letitloop import Queue, durable, step

QUEUE = Queue("bench")


def small(n):
    return "{SMALL}"


@durable
def job(n):
    started = step("first", time.time)
    step("second", small, n)
    step("third", small, n)
    return started
'''

DBOS_FLOW = f'''
import os
import time
from dbos import DBOS

DBOS(config={{"name": "lilbench", "system_database_url": os.environ["BENCH_DSN"],
             "application_version": "bench"}})


@DBOS.step()
def first():
    return time.time()


@DBOS.step()
def small(n):
    return "{SMALL}"


@DBOS.workflow()
def job(n):
    started = first()
    small(n)
    small(n)
    return started
'''


@dataclass(frozen=True)
class Plan:
    runs: int  # per throughput burst
    workers: int
    concurrency: int  # runs at once per worker
    rounds: int
    latency_samples: int  # per system and round


FULL = Plan(runs=1000, workers=4, concurrency=4, rounds=3, latency_samples=20)
QUICK = Plan(runs=200, workers=4, concurrency=4, rounds=1, latency_samples=10)


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def p90(xs: Sequence[float]) -> float:
    s = sorted(xs)
    return s[max(0, -(-9 * len(s) // 10) - 1)] if s else float("nan")


# -- helpers that run in a system's own interpreter ---------------------------------------------


def lil_enqueue(spec: str, first: int, count: int, latency: bool) -> None:
    """letitloop's enqueuer: a burst of ``count`` runs, or ``count`` latency samples."""
    import benchflow  # the scratch folder's flow, on sys.path

    out: dict[str, Any] = {}
    if latency:
        out["latency"] = []
        for n in range(first, first + count):
            time.sleep(random.uniform(0.1, 0.3))
            t0 = time.time()
            handle = benchflow.QUEUE.enqueue(benchflow.job, n)
            started = handle.result(timeout=60)
            out["latency"].append((started - t0) * 1e3)
    else:
        t0 = time.time()
        for n in range(first, first + count):
            benchflow.QUEUE.enqueue(benchflow.job, n)
        out = {"t0": t0, "enqueued": time.time()}
    print(json.dumps(out), flush=True)
    del spec


def dbos_worker(concurrency: int, polling: float) -> None:
    import dbosflow  # noqa: F401  (registers the workflow)
    from dbos import DBOS

    DBOS.listen_queues(["bench"])
    DBOS.launch()
    DBOS.register_queue("bench", worker_concurrency=concurrency, polling_interval_sec=polling)
    print("ready", flush=True)
    sys.stdin.read()  # until the harness closes our stdin
    os._exit(0)


def dbos_enqueue(first: int, count: int, latency: bool) -> None:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=os.environ["BENCH_DSN"], application_name="lilbench")
    opts: Any = {"workflow_name": "job", "queue_name": "bench", "app_version": "bench"}
    out: dict[str, Any] = {}
    if latency:
        out["latency"] = []
        for n in range(first, first + count):
            time.sleep(random.uniform(0.1, 0.3))
            t0 = time.time()
            handle = client.enqueue(opts, n)
            started = handle.get_result(polling_interval_sec=0.01)
            out["latency"].append((started - t0) * 1e3)
    else:
        t0 = time.time()
        for n in range(first, first + count):
            client.enqueue(opts, n)
        out = {"t0": t0, "enqueued": time.time()}
    print(json.dumps(out), flush=True)
    os._exit(0)


# -- the harness ---------------------------------------------------------------------------------


class System:
    """One system under test: its workers, its enqueuer, and how to count completions."""

    name: str

    def start(self, plan: Plan) -> None: ...
    def stop(self) -> None: ...
    def completed(self) -> int: ...
    def enqueue(self, first: int, count: int, latency: bool) -> dict[str, Any]: ...


class Lil(System):
    def __init__(self, name: str, spec: str, scratch: Path, count_sql: Callable[[], int]) -> None:
        self.name, self.spec, self.scratch, self.count = name, spec, scratch, count_sql
        self.env = {
            **os.environ,
            "PYTHONPATH": f"{scratch}{os.pathsep}{REPO}",
            "LIL_JOURNAL": spec,
            "LIL_LEASE_TTL": "30",
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, plan: Plan) -> None:
        from letitloop import open_journal

        lil = str(Path(sys.executable).with_name("lil"))
        for _ in range(plan.workers):
            cmd = [lil, "worker", "--queue", "bench", "--concurrency", str(plan.concurrency)]
            quiet = subprocess.DEVNULL
            proc = subprocess.Popen(cmd, cwd=self.scratch, env=self.env, stdout=quiet, stderr=quiet)
            self.procs.append(proc)
        journal = open_journal(self.spec)
        deadline = time.monotonic() + 60
        while len(journal.workers()) < plan.workers and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(60)
        self.procs = []

    def completed(self) -> int:
        return self.count()

    def enqueue(self, first: int, count: int, latency: bool) -> dict[str, Any]:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--lil-enqueue", self.spec]
        cmd += [str(first), str(count)] + (["--latency"] if latency else [])
        return _run_json(cmd, self.env, self.scratch)


class Dbos(System):
    def __init__(self, name: str, dsn: str, scratch: Path, polling: float) -> None:
        self.name, self.dsn, self.scratch, self.polling = name, dsn, scratch, polling
        self.env = {
            k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LIL_JOURNAL")
        } | {"BENCH_DSN": dsn, "PYTHONPATH": str(scratch)}
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, plan: Plan) -> None:
        for _ in range(plan.workers):
            cmd = [str(DBOS_PYTHON), str(Path(__file__).resolve()), "--dbos-worker"]
            cmd += [str(plan.concurrency), str(self.polling)]
            p = subprocess.Popen(
                cmd, cwd=self.scratch, env=self.env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
            self.procs.append(p)
        for p in self.procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"a DBOS worker did not start: {line!r}")

    def stop(self) -> None:
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.close()
        for p in self.procs:
            p.wait(60)
        self.procs = []

    def completed(self) -> int:
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            row = conn.execute(
                "SELECT count(*) FROM dbos.workflow_status WHERE queue_name = 'bench' AND "
                "status = 'SUCCESS'"
            ).fetchone()
        return int(row[0]) if row else 0

    def enqueue(self, first: int, count: int, latency: bool) -> dict[str, Any]:
        cmd = [str(DBOS_PYTHON), str(Path(__file__).resolve()), "--dbos-enqueue"]
        cmd += [str(first), str(count)] + (["--latency"] if latency else [])
        return _run_json(cmd, self.env, self.scratch)


def _run_json(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[2]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def burst(system: System, plan: Plan, first: int) -> dict[str, float]:
    """N runs enqueued at once by another process; runs completed per second."""
    before = system.completed()
    times = system.enqueue(first, plan.runs, latency=False)
    deadline = time.monotonic() + 1800
    while system.completed() - before < plan.runs:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{system.name}: the burst did not finish")
        time.sleep(0.01)
    done = time.time()
    return {
        "runs_per_s": plan.runs / (done - times["t0"]),
        "enqueue_s": times["enqueued"] - times["t0"],
        "total_s": done - times["t0"],
    }


def lil_counter(spec: str) -> Callable[[], int]:
    from letitloop import open_journal

    journal = open_journal(spec)

    def count() -> int:
        return sum(q.finished for q in journal.queues() if q.spec.name == "bench")

    return count


def code_version() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "letitloop"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def measure(plan: Plan, pg: Any, scratch: Path, only: str = "") -> dict[str, Any]:
    (scratch / "benchflow.py").write_text(textwrap.dedent(LIL_FLOW))
    (scratch / "dbosflow.py").write_text(textwrap.dedent(DBOS_FLOW))
    (scratch / ".letitloop").mkdir()
    lil_pg = pg.database_dsn("bench_lil")
    lil_duck = str(scratch / ".letitloop" / "journal.duckdb")
    systems: list[System] = [
        Lil("letitloop (PostgreSQL)", lil_pg, scratch, lil_counter(lil_pg)),
        Dbos("DBOS (polling 1 s)", pg.database_dsn("bench_dbos1"), scratch, 1.0),
        Dbos("DBOS (polling 0.01 s)", pg.database_dsn("bench_dbos2"), scratch, 0.01),
        Lil("letitloop (DuckDB)", lil_duck, scratch, lil_counter(lil_duck)),
    ]
    systems = [s for s in systems if only.lower() in s.name.lower()]
    data: dict[str, Any] = {
        "meta": {
            "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "commit": code_version(),
            "python": platform.python_version(),
            "plan": plan.__dict__,
            "loadavg_start": os.getloadavg(),
            "cpus": os.cpu_count(),
        },
        "systems": {s.name: {"bursts": [], "latency_ms": []} for s in systems},
    }
    first = 0
    for r in range(plan.rounds):
        order = systems if r % 2 == 0 else list(reversed(systems))
        for system in order:
            system.start(plan)
            try:
                system.enqueue(10**6 + first, 3, latency=False)  # warm: imports, connections
                first += 3
                row = data["systems"][system.name]
                b = burst(system, plan, first)
                first += plan.runs
                row["bursts"].append(b)
                lat = system.enqueue(first, plan.latency_samples, latency=True)["latency"]
                first += plan.latency_samples
                row["latency_ms"] += lat
                print(
                    f"[round {r + 1}] {system.name}: {b['runs_per_s']:.0f} runs/s "
                    f"(enqueue {b['enqueue_s']:.2f} s of {b['total_s']:.2f} s); claim latency "
                    f"median {med(lat):.1f} ms",
                    flush=True,
                )
            finally:
                system.stop()
    data["meta"]["loadavg_end"] = os.getloadavg()
    return data


def report(data: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(system, throughput, ratio to letitloop on PostgreSQL, claim latency median, p90)."""
    rows = []
    first = next(iter(data["systems"].values()))
    ours = data["systems"].get("letitloop (PostgreSQL)", first)
    base = med([b["runs_per_s"] for b in ours["bursts"]])
    for name, row in data["systems"].items():
        rate = med([b["runs_per_s"] for b in row["bursts"]])
        lat = row["latency_ms"]
        rows.append(
            (name, f"{rate:,.0f} runs/s", f"{base / rate:.2f}x", f"{med(lat):.1f} ms",
             f"{p90(lat):.1f} ms")
        )  # fmt: skip
    return rows


def verdict(data: dict[str, Any]) -> list[str]:
    systems = data["systems"]
    ours = systems["letitloop (PostgreSQL)"]
    rate = med([b["runs_per_s"] for b in ours["bursts"]])
    best = max(
        med([b["runs_per_s"] for b in row["bursts"]])
        for name, row in systems.items()
        if name.startswith("DBOS")
    )
    lat = med(ours["latency_ms"])
    return [
        f"throughput at least DBOS's best: {rate:,.0f} vs {best:,.0f} runs/s "
        f"({rate / best:.2f}x) {'PASS' if rate >= best else 'FAIL'}",
        f"claim latency under {BARS['latency_ms']:g} ms with idle workers: {lat:.1f} ms "
        f"{'PASS' if lat < BARS['latency_ms'] else 'FAIL'}",
    ]


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--lil-enqueue":
        lil_enqueue(args[1], int(args[2]), int(args[3]), "--latency" in args)
        return 0
    if args and args[0] == "--dbos-worker":
        dbos_worker(int(args[1]), float(args[2]))
        return 0
    if args and args[0] == "--dbos-enqueue":
        dbos_enqueue(int(args[1]), int(args[2]), "--latency" in args)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (1 round, 200 runs)")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--dsn", help="an existing PostgreSQL server (default: a throwaway one)")
    parser.add_argument("--only", default="", help="the systems whose name holds this text")
    opts = parser.parse_args(args)
    if not DBOS_PYTHON.exists():
        print(f"{DBOS_PYTHON} is missing: `make bench-peers` builds it", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    from tests.pg_cluster import external_server, open_server

    dsn = opts.dsn or os.environ.get("LIL_TEST_PG_DSN")
    pg = external_server(dsn) if dsn else open_server()
    try:
        with tempfile.TemporaryDirectory(prefix="lil-queues-bench-") as tmp:
            data = measure(QUICK if opts.quick else FULL, pg, Path(tmp), opts.only)
    finally:
        pg.close()
    print(f"\ncommit {data['meta']['commit']}, load {data['meta']['loadavg_start']}")
    print("| system | throughput | letitloop PG / it | claim latency (median) | p90 |")
    print("|---|---|---|---|---|")
    for row in report(data):
        print("| " + " | ".join(row) + " |")
    if not opts.only:
        for line in verdict(data):
            print(line)
    if opts.json:
        opts.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
