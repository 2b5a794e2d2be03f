"""Benchmark of the PostgreSQL journal, in one run with the DuckDB journal and two peers.

    python benchmarks/postgres.py [--quick] [--json OUT] [--dsn postgresql://...]

On one PostgreSQL server (a throwaway cluster started by ``tests/pg_cluster.py``: fsync and
synchronous_commit on, or ``--dsn`` / ``LIL_TEST_PG_DSN``), each in a database of its own:

- the floor: one durable single-row commit (an autocommit INSERT of a 200 B journal-shaped row
  on a held connection, the same TCP DSN the journal uses);
- letitloop on PostgreSQL and on DuckDB (owner on the local disk): per-step overhead of a
  ``@durable`` run of N steps, the in-process resume of 1000 completed steps, and 4 and 16
  writer processes each running its own run;
- DBOS (pip ``dbos``) per step, and LangGraph's ``PostgresSaver`` per graph node, against the
  letitloop LangGraph saver on the same server. The peers run in their own virtualenv
  (``benchmarks/.venvs/pg-peers``, created by this script on first use; never the project's
  ``.venv``).

Bars (issue #34): per step <= 2x the single-row commit; resume of 1000 steps <= 5 ms; 16 writers
>= 0.6x the bare-commit floor of 16 processes measured in the same run. Every figure is a median
of one run; ratios are to figures of the same run. What each figure means is in
``benchmarks/README.md`` (section "postgres.py"). The script also runs as its own helper
(``--worker ...``, ``--peer ...``): those modes are internal.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
# this folder holds langgraph.py: it must not shadow the langgraph package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SMALL = "0123456789abcdefghij"  # a 20-byte step output
RESUME_STEPS = 1000
PEERS_VENV = HERE / ".venvs" / "pg-peers"
PEERS = ["dbos==3.4.0", "langgraph-checkpoint-postgres==3.2.0", "langgraph>=1.2", "psycopg[binary]"]
# the bars of issue #34: 16 writers against the floor of the same run (16 processes committing a
# bare row each: what one-commit-per-step throughput this server and machine allow)
BARS = {"per_step_x_commit": 2.0, "resume_ms": 5.0, "writers16_x_bare": 0.6}


@dataclass(frozen=True)
class Plan:
    commits: int  # single-row commits per floor block (3 blocks)
    step_reps: int
    step_ns: tuple[int, ...]
    resume_reps: int
    writer_reps: int
    writer_secs: float
    peer_reps: int
    lg_nodes: int


FULL = Plan(300, 5, (10, 100, 1000), 20, 2, 3.0, 3, 50)
QUICK = Plan(100, 2, (10, 100), 5, 1, 2.0, 2, 20)


def summary(xs: Sequence[float]) -> dict[str, float]:
    s = sorted(xs)
    return {
        "n": len(s),
        "median": statistics.median(s),
        "p90": s[max(0, -(-9 * len(s) // 10) - 1)],
        "min": s[0],
        "max": s[-1],
    }


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs)


# -- the floor ----------------------------------------------------------------------------------


def single_row_commits(dsn: str, n: int) -> list[float]:
    """Autocommit INSERT of one 200 B journal-shaped row on a held connection (ms each)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS floor(run_id text, epoch int, position int, attempt int,"
            " output bytea, PRIMARY KEY (run_id, epoch, position, attempt))"
        )
        run = uuid.uuid4().hex
        times = []
        for i in range(n + 20):
            row = [run, 0, i, 1, os.urandom(200)]
            t = time.perf_counter()
            conn.execute("INSERT INTO floor VALUES (%s, %s, %s, %s, %s)", row)
            if i >= 20:
                times.append((time.perf_counter() - t) * 1e3)
    return times


# -- letitloop ----------------------------------------------------------------------------------


def per_step(journal: str, n: int, tag: str) -> float:
    """One repetition: the per-step overhead (ms) of an n-step run with a fresh run id."""
    from letitloop import durable, step

    def produce(i: int) -> str:
        return SMALL

    def body(step_fn: Callable[..., Any]) -> int:
        return sum(len(step_fn(f"s{i}", produce, i)) for i in range(n))

    @durable(journal=journal, run_id=f"{tag}-{uuid.uuid4().hex[:8]}", name="bench.steps")
    def wf() -> int:
        return body(step)

    t = time.perf_counter()
    body(lambda name, fn, *a: fn(*a))
    plain = time.perf_counter() - t
    t = time.perf_counter()
    assert wf() == n * len(SMALL)
    return (time.perf_counter() - t - plain) * 1e3 / n


def resume_times(journal: str, reps: int) -> list[float]:
    """A run of 1000 completed steps whose step 1001 always raises, called again ``reps`` times
    in this process: ms from the call until step 1001 starts (open_run + replay of 1000)."""
    from letitloop import durable, step

    ran: list[int] = []
    reached: list[float] = []

    def produce(i: int) -> str:
        ran.append(i)
        if i >= RESUME_STEPS:
            reached.append(time.perf_counter())
            raise RuntimeError("the last step fails on every attempt")
        return SMALL

    @durable(journal=journal, run_id=f"resume-{uuid.uuid4().hex[:6]}", name="bench.resume")
    def wf() -> None:
        for i in range(RESUME_STEPS + 1):
            step(f"s{i}", produce, i)

    with contextlib.suppress(RuntimeError):
        wf()
    assert ran == [*range(RESUME_STEPS + 1)], len(ran)
    times = []
    for i in range(reps + 2):
        ran.clear()
        reached.clear()
        t = time.perf_counter()
        with contextlib.suppress(RuntimeError):
            wf()
        assert ran == [RESUME_STEPS], ran  # nothing but the failing step ran again
        if i >= 2:
            times.append((reached[-1] - t) * 1e3)
    return times


def raw_writer_main(dsn: str, run_id: str) -> None:
    """The writers' floor: a process that commits one journal-shaped row per loop (autocommit
    INSERT on a held connection, no letitloop), from t0 until t1. N of these side by side are
    the most single-row commits per second the server and the machine give N clients, which
    bounds any journal that makes a step durable with one commit."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        print("ready", flush=True)
        t0, t1 = (float(x) for x in sys.stdin.readline().split())
        time.sleep(max(0.0, t0 - time.time()))
        start, i = time.time(), 0
        while time.time() < t1:
            conn.execute(
                "INSERT INTO floor VALUES (%s, %s, %s, %s, %s)", [run_id, 0, i, 1, b"x" * 200]
            )
            i += 1
    print(json.dumps({"steps": i, "start": start, "end": time.time()}), flush=True)


def writer_main(journal: str, run_id: str) -> None:
    """A writer process: connect, say ready, read (t0, t1), take durable steps until t1."""
    if journal.startswith("raw:"):
        raw_writer_main(journal[4:], run_id)
        return
    from letitloop import durable, open_journal, step

    open_journal(journal).list_runs(limit=1)  # connected, runtime imported
    print("ready", flush=True)
    t0, t1 = (float(x) for x in sys.stdin.readline().split())

    def produce(i: int) -> str:
        return SMALL

    @durable(journal=journal, run_id=run_id, name="bench.writer")
    def wf() -> int:
        i = 0
        while time.time() < t1:
            step(f"s{i}", produce, i)
            i += 1
        return i

    time.sleep(max(0.0, t0 - time.time()))
    start = time.time()
    n = wf()
    print(json.dumps({"steps": n, "start": start, "end": time.time()}), flush=True)


def writers(journal: str, count: int, secs: float, env: dict[str, str]) -> dict[str, Any]:
    """``count`` writer processes started together; total steps per second of the window."""
    procs = []
    for w in range(count):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", journal]
        cmd.append(f"w{count}-{w}-{uuid.uuid4().hex[:6]}")
        procs.append(
            subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        )
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        t0 = time.time() + 0.5
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(f"{t0!r} {t0 + secs!r}\n")
            p.stdin.flush()
        outs = []
        for p in procs:
            stdout, _ = p.communicate(timeout=secs + 120)
            if p.returncode != 0:
                raise RuntimeError(f"writer failed with code {p.returncode}")
            outs.append(json.loads(stdout.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    window = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    steps = sum(o["steps"] for o in outs)
    return {"steps": steps, "window_s": window, "steps_per_s": steps / window}


def linear_graph(nodes: int, checkpointer: Any) -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        n: int

    g = StateGraph(State)
    names = [f"node{i}" for i in range(nodes)]
    for name in names:
        g.add_node(name, lambda s: {"n": s["n"] + 1})
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(checkpointer=checkpointer)


def graph_per_node(saver: Any, nodes: int, reps: int) -> list[float]:
    """ms per node of a linear graph with durable (sync) checkpoints, less the bare graph."""
    bare = linear_graph(nodes, None)
    app = linear_graph(nodes, saver)
    app.invoke({"n": 0}, {"configurable": {"thread_id": f"warm-{uuid.uuid4().hex}"}})
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        assert bare.invoke({"n": 0})["n"] == nodes
        plain = time.perf_counter() - t
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        t = time.perf_counter()
        assert app.invoke({"n": 0}, config, durability="sync")["n"] == nodes
        out.append((time.perf_counter() - t - plain) * 1e3 / nodes)
    return out


# -- peers (run in benchmarks/.venvs/pg-peers) ----------------------------------------------------


def peer_dbos(dsn: str, ns: list[int], reps: int) -> dict[str, list[float]]:
    from dbos import DBOS, SetWorkflowID

    DBOS(config={"name": "lilbench", "system_database_url": dsn})

    @DBOS.step()
    def produce(i: int) -> str:
        return SMALL

    @DBOS.workflow()
    def wf(n: int) -> int:
        return sum(len(produce(i)) for i in range(n))

    DBOS.launch()
    found: dict[str, list[float]] = {}
    for n in ns:
        with SetWorkflowID(f"warm-{n}-{uuid.uuid4().hex}"):
            wf(n)
        per = []
        for _ in range(reps if n < 1000 else max(2, reps // 2)):
            with SetWorkflowID(uuid.uuid4().hex):  # the bare body takes microseconds
                t = time.perf_counter()
                assert wf(n) == n * len(SMALL)
                per.append((time.perf_counter() - t) * 1e3 / n)
        found[str(n)] = per
    return found


def peer_postgres_saver(dsn: str, nodes: int, reps: int) -> list[float]:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        return graph_per_node(saver, nodes, reps)


def ensure_peers() -> Path:
    """The peers' virtualenv's python, created (and the peers installed) on first use."""
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        print(f"[peers] creating {PEERS_VENV} with {' '.join(PEERS)}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *PEERS], check=True, timeout=1800
        )
    return python


def run_peer(python: Path, *args: str) -> Any:
    cmd = [str(python), str(Path(__file__).resolve()), "--peer", *args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LIL_JOURNAL")}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env, cwd=HERE)
    if done.returncode != 0:
        raise RuntimeError(f"peer {args[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the run ------------------------------------------------------------------------------------


def code_version() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "letitloop"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def measure(plan: Plan, pg: Any, scratch: Path, env: dict[str, str]) -> dict[str, Any]:
    import psycopg

    data: dict[str, Any] = {
        "meta": {
            "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "commit": code_version(),
            "python": platform.python_version(),
            "psycopg": psycopg.__version__,
            "plan": plan.__dict__,
            "loadavg_start": os.getloadavg(),
        }
    }
    with psycopg.connect(pg.dsn) as conn:
        row = conn.execute(
            "SELECT version(), current_setting('fsync'), current_setting('synchronous_commit')"
        ).fetchone()
    data["meta"]["server"] = list(row or [])
    floor_db = pg.database_dsn("bench_floor")
    lil_pg = pg.database_dsn("bench_lil")
    lil_duck = str(scratch / "duck" / "journal.duckdb")
    journals = {"postgres": lil_pg, "duckdb": lil_duck}
    from letitloop import open_journal

    for spec in journals.values():
        open_journal(spec).list_runs(limit=1)  # connected (the owner started) before timing

    commits: list[float] = []

    def floor_block() -> None:
        xs = single_row_commits(floor_db, plan.commits)
        commits.extend(xs)
        print(f"[floor] single-row commit: median {med(xs):.3f} ms", flush=True)

    floor_block()
    steps: dict[str, dict[int, list[float]]] = {b: {n: [] for n in plan.step_ns} for b in journals}
    for backend, spec in journals.items():
        for n in plan.step_ns:
            per_step(spec, n, f"warm-{backend}")
    for r in range(plan.step_reps):
        for backend, spec in journals.items():  # interleaved: a noisy spell hits both alike
            for n in plan.step_ns:
                steps[backend][n].append(per_step(spec, n, f"{backend}-{n}-{r}"))
    floor_block()
    data["steps"] = {b: {str(n): summary(v) for n, v in s.items()} for b, s in steps.items()}
    data["resume"] = {
        b: summary(resume_times(spec, plan.resume_reps)) for b, spec in journals.items()
    }
    print(f"[resume] {json.dumps({b: round(v['median'], 2) for b, v in data['resume'].items()})}")
    data["writers"] = {}
    for count in (4, 16):  # the floor: one bare commit per step, as many clients
        reps = [
            writers(f"raw:{floor_db}", count, plan.writer_secs, env)
            for _ in range(plan.writer_reps)
        ]
        rates = [r["steps_per_s"] for r in reps]
        data["writers"][f"raw/{count}"] = summary(rates) | {"reps": reps}
        print(f"[writers] bare single-row commits x{count}: {med(rates):,.0f} /s", flush=True)
    for backend, spec in journals.items():
        for count in (4, 16):
            reps = [writers(spec, count, plan.writer_secs, env) for _ in range(plan.writer_reps)]
            rates = [r["steps_per_s"] for r in reps]
            data["writers"][f"{backend}/{count}"] = summary(rates) | {"reps": reps}
            print(f"[writers] {backend} x{count}: {med(rates):,.0f} steps/s", flush=True)
    floor_block()
    data["floor"] = summary(commits)

    from letitloop.adapters.langgraph import LetItLoopCheckpointSaver

    lg_db = pg.database_dsn("bench_lg_lil")
    data["langgraph_letitloop_pg"] = summary(
        graph_per_node(
            LetItLoopCheckpointSaver(lg_db, graph="bench"), plan.lg_nodes, plan.peer_reps
        )
    )
    python = ensure_peers()
    ns = [n for n in plan.step_ns if n >= 100]
    dbos = run_peer(
        python, "dbos", pg.database_dsn("bench_dbos"), ",".join(map(str, ns)), str(plan.peer_reps)
    )
    data["dbos"] = {n: summary(v) for n, v in dbos.items()}
    lg = run_peer(
        python,
        "postgres-saver",
        pg.database_dsn("bench_lg_pg"),
        str(plan.lg_nodes),
        str(plan.peer_reps),
    )
    data["langgraph_postgres_saver"] = summary(lg)
    data["meta"]["loadavg_end"] = os.getloadavg()
    return data


def report(data: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The table: (figure, median, ratio, bar ✔/✘)."""
    floor = data["floor"]["median"]
    rows = [("PostgreSQL durable single-row commit (the floor)", f"{floor:.3f} ms", "1.0x", "")]
    for backend in ("postgres", "duckdb"):
        for n, s in data["steps"][backend].items():
            x = s["median"] / floor
            bar = ""
            if backend == "postgres" and int(n) >= 100:
                ok = x <= BARS["per_step_x_commit"]
                bar = f"<= {BARS['per_step_x_commit']:g}x commit {'✔' if ok else '✘'}"
            rows.append(
                (
                    f"letitloop on {backend}: per step, N={n}",
                    f"{s['median']:.3f} ms",
                    f"{x:.2f}x",
                    bar,
                )
            )
    for n, s in data["dbos"].items():
        rows.append(
            (
                f"DBOS 3.4 on the same server: per step, N={n}",
                f"{s['median']:.3f} ms",
                f"{s['median'] / floor:.2f}x",
                f"{s['median'] / data['steps']['postgres'][n]['median']:.2f}x letitloop's",
            )
        )
    for backend, s in data["resume"].items():
        bar = ""
        if backend == "postgres":
            ok = s["median"] <= BARS["resume_ms"]
            bar = f"<= {BARS['resume_ms']:g} ms {'✔' if ok else '✘'}"
        rows.append(
            (
                f"letitloop on {backend}: resume 1000 steps, in process",
                f"{s['median']:.2f} ms",
                "",
                bar,
            )
        )
    for key, s in data["writers"].items():
        backend, count = key.split("/")
        bar, ratio = "", ""
        raw = data["writers"].get(f"raw/{count}")
        if backend == "postgres" and count == "16" and raw:
            ok = s["median"] >= BARS["writers16_x_bare"] * raw["median"]
            bar = f">= {BARS['writers16_x_bare']:g}x bare {'✔' if ok else '✘'}"
        if backend != "raw" and raw:
            ratio = f"{s['median'] / raw['median']:.2f}x bare"
        label = (
            f"bare single-row commits, {count} client processes (the floor)"
            if backend == "raw"
            else f"letitloop on {backend}: {count} writer processes"
        )
        rows.append((label, f"{s['median']:,.0f} steps/s", ratio, bar))
    lil, peer = data["langgraph_letitloop_pg"]["median"], data["langgraph_postgres_saver"]["median"]
    rows.append(
        (
            "LangGraph + letitloop saver on PostgreSQL: per node",
            f"{lil:.3f} ms",
            f"{lil / floor:.2f}x",
            "",
        )
    )
    rows.append(
        (
            "LangGraph + PostgresSaver 3.2: per node",
            f"{peer:.3f} ms",
            f"{peer / floor:.2f}x",
            f"{peer / lil:.2f}x letitloop's" if lil > 0 else "",
        )
    )
    return rows


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    head = ("figure", "median", "x commit", "bar")
    lines = [head, *rows]
    widths = [max(len(r[i]) for r in lines) for i in range(4)]
    for i, r in enumerate(lines):
        print(
            "  ".join(
                c.ljust(w) if j == 0 else c.rjust(w)
                for j, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (about 1 min)")
    parser.add_argument("--json", metavar="OUT", help="write every number to this JSON file")
    parser.add_argument("--dsn", help="an existing server (its role may CREATE DATABASE)")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="S",
        help="first wait up to S seconds for two 1 s probes with the CPUs >= 90%% idle",
    )
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--peer", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        writer_main(*args.worker)
        return 0
    if args.peer:
        what, dsn, *rest = args.peer
        if what == "dbos":
            found: Any = peer_dbos(dsn, [int(n) for n in rest[0].split(",")], int(rest[1]))
        else:
            found = peer_postgres_saver(dsn, int(rest[0]), int(rest[1]))
        print(json.dumps(found), flush=True)
        os._exit(0)  # DBOS leaves non-daemon threads behind
    if args.dsn:
        os.environ["LIL_TEST_PG_DSN"] = args.dsn
    from tests.pg_cluster import cluster

    plan = QUICK if args.quick else FULL
    from benchmarks.journal import cpu_idle, wait_quiet

    idle = wait_quiet(args.wait_quiet) if args.wait_quiet else cpu_idle()
    base = REPO / ".bench"
    base.mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="postgres-", dir=base))
    os.environ["LIL_KEY_DIR"] = str(scratch / "keys")
    os.environ["LIL_OWNER_IDLE"] = "900"
    os.environ.pop("LIL_JOURNAL", None)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    try:
        with cluster() as pg:
            data = measure(plan, pg, scratch, env)
    finally:
        from letitloop.journal.duckdb._client import stop_owner

        with contextlib.suppress(Exception):
            stop_owner(scratch / "duck" / "journal.duckdb")
        shutil.rmtree(scratch, ignore_errors=True)
    data["meta"]["duration_s"] = round(time.perf_counter() - started, 1)
    data["meta"]["cpu_idle_at_start"] = idle
    print()
    print_table(report(data))
    meta = data["meta"]
    print(f"\n{meta['duration_s']} s, commit {meta['commit']}, load {meta['loadavg_end']}")
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
