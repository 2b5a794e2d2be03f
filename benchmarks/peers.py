"""letitloop and its peers on one workload, one run, one disk: per step, resume, import, writers.

    .venv/bin/python benchmarks/peers.py [--quick] [--only letitloop,langgraph] [--json OUT]
    make bench-peers                       # builds .venvs/peers-* first (pins: benchmarks/peers/)

The peers are LangGraph + SqliteSaver, DBOS on SQLite and Prefect 3 (local ephemeral server).
Each one's workload runs in its own virtualenv's interpreter (``.venvs/peers-NAME``, versions
pinned in ``benchmarks/peers/NAME.txt``; LangGraph falls back to this interpreter when it has
``langgraph-checkpoint-sqlite``) as a subprocess of this script, ``--worker PEER TASK ...``,
that prints one JSON line. The same figures for every peer, all scratch data in one directory:

    per step        a workflow of N trivial steps (20 B outputs), each step made durable as far
                    as the peer allows: (wall - the same plain loop) / N
    resume          a run whose process was SIGKILLed in step 1001 after 1000 finished steps,
                    resumed by a fresh process: the resume call in that process, and the whole
                    process over a bare interpreter; only step 1001 may run again
    import          the peer's front door (``python -c "from X import ..."``) over ``-c pass``
    4 writers       4 processes on one store, started together, total steps/s

Repetitions interleave the peers (round r runs every peer once before round r + 1), figures are
medians, ratios are to letitloop's, and the fsync floor (append 200 B + fdatasync) is measured in
the same directory. The output ends with a Markdown table for the top-level README.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

REPO = Path(__file__).resolve().parents[1]
# this folder holds langgraph.py, which must not shadow the langgraph package in a worker
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
SMALL = "0123456789abcdefghij"  # a 20-byte step output
TIMES = "\u00d7"  # the README's multiplication sign
PEERS = ("letitloop", "langgraph", "dbos", "prefect")
TITLES = {
    "letitloop": "letitloop",
    "langgraph": "LangGraph + SqliteSaver",
    "dbos": "DBOS (SQLite)",
    "prefect": "Prefect 3",
}
# What "durable per step" means for each peer, as configured here.
DURABILITY = {
    "letitloop": "every step's output fsynced to the journal before step() returns",
    "langgraph": 'a checkpoint committed to SQLite (WAL) after every node (durability="sync")',
    "dbos": "every @DBOS.step's output committed to its SQLite system database",
    "prefect": "every @task's result persisted to a file, its state sent to the local API server",
}
# The front door of each peer, imported in a fresh interpreter.
FRONT_DOOR = {
    "letitloop": "from letitloop import durable, step",
    "langgraph": "from langgraph.graph import StateGraph; "
    "from langgraph.checkpoint.sqlite import SqliteSaver",
    "dbos": "from dbos import DBOS",
    "prefect": "from prefect import flow, task",
}
DISTRIBUTIONS = {
    "letitloop": ["letitloop", "duckdb", "msgpack"],
    "langgraph": ["langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite"],
    "dbos": ["dbos", "sqlalchemy"],
    "prefect": ["prefect", "sqlalchemy", "uvicorn"],
}


# -- the workloads (run in the peer's own interpreter: standard library imports only up here) ----


BEFORE_EXIT: list[Callable[[], None]] = []  # what a worker stops before os._exit


def emit(obj: Any) -> None:
    """The worker's answer: one JSON line; then exit without waiting for the peer's threads."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
    for stop in BEFORE_EXIT:
        stop()
    os._exit(0)


def plain_loop(n: int) -> float:
    """The same n calls without any framework (seconds)."""
    t = time.perf_counter()
    total = 0
    for i in range(n):
        total += len(produce_plain(i))
    assert total == n * len(SMALL)
    return time.perf_counter() - t


def produce_plain(i: int) -> str:
    return SMALL


def kill_self() -> None:
    """What the crash leaves behind: the process dies in the middle of a step."""
    os.kill(os.getpid(), signal.SIGKILL)


class GraphState(TypedDict):
    """The LangGraph workload's state: the next step's index and the outputs' total length."""

    i: int
    total: int


class Peer:
    """One peer's workload: ``steps``, ``crash``, ``resume`` and ``writer`` in a scratch dir."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.executed = 0  # step functions that really ran (not replayed) in this process
        self.crash_at = -1  # the step whose function kills this process (not a step argument)

    def produce(self, i: int) -> str:
        self.executed += 1
        if i == self.crash_at:
            kill_self()
        return SMALL

    def workflow(self, run_id: str, n: int) -> int:  # pragma: no cover
        raise NotImplementedError

    def setup(self, wid: str = "main") -> None:
        pass

    def steps(self, n: int, reps: int) -> dict[str, Any]:
        t = time.perf_counter()
        self.setup()
        self.workflow(f"warm-{uuid.uuid4().hex}", min(n, 10))
        setup_ms = (time.perf_counter() - t) * 1e3
        per = []
        for _ in range(reps):
            plain = plain_loop(n)
            t = time.perf_counter()
            got = self.workflow(f"steps-{uuid.uuid4().hex}", n)
            wall = time.perf_counter() - t
            assert got == n * len(SMALL), got
            per.append((wall - plain) * 1e3 / n)
        return {"per_step_ms": per, "setup_ms": setup_ms}

    def crash(self, run_id: str, n: int) -> None:
        self.setup()
        self.crash_at = n
        self.workflow(run_id, n + 1)
        raise AssertionError("step n + 1 should have killed this process")

    def resume(self, run_id: str, n: int) -> dict[str, Any]:
        self.setup()
        t = time.perf_counter()
        got = self.resume_call(run_id, n)
        took = (time.perf_counter() - t) * 1e3
        assert got == (n + 1) * len(SMALL), got
        return {"resume_ms": took, "executed": self.executed}

    def resume_call(self, run_id: str, n: int) -> int:
        return self.workflow(run_id, n + 1)

    def writer(self, wid: str, n: int) -> dict[str, Any]:
        """Say ready, wait for "t0 t1" on stdin, run n-step workflows from t0 until t1."""
        self.setup(wid)
        self.workflow(f"warm-{wid}-{uuid.uuid4().hex}", 2)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        t0, t1 = map(float, sys.stdin.readline().split())
        time.sleep(max(0.0, t0 - time.time()))
        start = time.time()
        steps = 0
        while time.time() < t1:
            self.workflow(f"w-{wid}-{uuid.uuid4().hex}", n)
            steps += n
        return {"steps": steps, "start": start, "end": time.time()}


class LetItLoop(Peer):
    def setup(self, wid: str = "main") -> None:
        sys.path.insert(0, str(REPO))
        from letitloop import durable, step

        self.durable, self.step = durable, step
        self.journal = str(self.scratch / "store-letitloop" / "journal.duckdb")

    def workflow(self, run_id: str, n: int) -> int:
        produce, step = self.produce, self.step

        @self.durable(journal=self.journal, run_id=run_id, name="peers.steps")
        def wf() -> int:
            return sum(len(step(f"s{i}", produce, i)) for i in range(n))

        return int(wf())


class LangGraph(Peer):
    """A linear StateGraph of n nodes, one node a step, checkpointed by SqliteSaver."""

    def setup(self, wid: str = "main") -> None:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        path = self.scratch / "store-langgraph" / "checkpoints.sqlite"
        path.parent.mkdir(exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self.saver = SqliteSaver(conn)
        self.saver.setup()
        self.graphs: dict[int, Any] = {}

    def graph(self, n: int) -> Any:
        if n in self.graphs:
            return self.graphs[n]
        from langgraph.graph import END, START, StateGraph

        def node(state):  # type: ignore[no-untyped-def]  # LangGraph reads hints at run time
            out = self.produce(state["i"])
            return {"i": state["i"] + 1, "total": state["total"] + len(out)}

        g = StateGraph(GraphState)
        names = [f"s{i}" for i in range(n)]
        for name in names:
            g.add_node(name, node)
        g.add_edge(START, names[0])
        for a, b in zip(names, names[1:], strict=False):
            g.add_edge(a, b)
        g.add_edge(names[-1], END)
        app = g.compile(checkpointer=self.saver)
        self.graphs[n] = app
        return app

    def config(self, run_id: str, n: int) -> Any:
        return {"configurable": {"thread_id": run_id}, "recursion_limit": n + 10}

    def workflow(self, run_id: str, n: int) -> int:
        app = self.graph(n)
        out = app.invoke({"i": 0, "total": 0}, self.config(run_id, n), durability="sync")
        return int(out["total"])

    def resume(self, run_id: str, n: int) -> dict[str, Any]:
        self.setup()
        self.graph(n + 1)  # building the graph is not resume work (the others decorate)
        return super().resume(run_id, n)

    def resume_call(self, run_id: str, n: int) -> int:
        app = self.graph(n + 1)
        out = app.invoke(None, self.config(run_id, n + 1), durability="sync")
        return int(out["total"])


class Dbos(Peer):
    """@DBOS.step calls in a @DBOS.workflow, the system database a SQLite file."""

    def setup(self, wid: str = "main") -> None:
        from dbos import DBOS, SetWorkflowID

        self.DBOS, self.SetWorkflowID = DBOS, SetWorkflowID
        url = f"sqlite:///{self.scratch / 'store-dbos' / 'dbos.sqlite'}"
        (self.scratch / "store-dbos").mkdir(exist_ok=True)
        # one executor id per process, so a process that starts never recovers another's runs
        DBOS(
            config={
                "name": "peersbench",
                "system_database_url": url,
                "application_version": "peers-1",
                "executor_id": f"peers-{wid}",
                "log_level": "WARNING",
            }
        )
        peer = self

        @DBOS.step()
        def produce(i: int) -> str:
            return peer.produce(i)

        @DBOS.workflow()
        def wf(n: int) -> int:
            return sum(len(produce(i)) for i in range(n))

        self.wf = wf
        DBOS.launch()

    def workflow(self, run_id: str, n: int) -> int:
        with self.SetWorkflowID(run_id):
            return int(self.wf(n))

    def resume(self, run_id: str, n: int) -> dict[str, Any]:
        # DBOS resumes PENDING runs of its own executor at launch(): the setup is the resume
        from dbos import DBOS

        t = time.perf_counter()
        self.setup("main")
        got = DBOS.retrieve_workflow(run_id).get_result(polling_interval_sec=0.01)
        took = (time.perf_counter() - t) * 1e3
        assert got == (n + 1) * len(SMALL), got
        return {"resume_ms": took, "executed": self.executed}


class Prefect(Peer):
    """@task calls with persisted, cache-keyed results in a @flow; a local ephemeral server."""

    def setup(self, wid: str = "main") -> None:
        from prefect import flow, task

        peer = self

        def key(_ctx: Any, params: dict[str, Any]) -> str:
            return f"{params['run_id']}-{params['i']}"

        @task(persist_result=True, cache_key_fn=key)
        def produce(run_id: str, i: int) -> str:
            return peer.produce(i)

        @flow(persist_result=True)
        def wf(run_id: str, n: int) -> int:
            return sum(len(produce(run_id, i)) for i in range(n))

        self.wf = wf
        BEFORE_EXIT.append(stop_prefect_servers)

    def workflow(self, run_id: str, n: int) -> int:
        return int(self.wf(run_id, n))


def stop_prefect_servers() -> None:
    """Stop the temporary API servers this process started (os._exit skips Prefect's atexit)."""
    from prefect.server.api.server import SubprocessASGIServer

    for server in list(SubprocessASGIServer._instances.values()):
        with contextlib.suppress(Exception):
            server.stop()


WORKLOADS: dict[str, Callable[[Path], Peer]] = {
    "letitloop": LetItLoop,
    "langgraph": LangGraph,
    "dbos": Dbos,
    "prefect": Prefect,
}


def worker_main(peer: str, task: str, scratch: Path, rest: list[str]) -> None:
    if task == "versions":
        from importlib import metadata

        found = {}
        for dist in DISTRIBUTIONS[peer]:
            with contextlib.suppress(metadata.PackageNotFoundError):
                found[dist] = metadata.version(dist)
        emit({"python": platform.python_version(), "packages": found})
    work = WORKLOADS[peer](scratch)
    if task == "steps":
        emit(work.steps(int(rest[0]), int(rest[1])))
    elif task == "crash":
        work.crash(rest[0], int(rest[1]))
    elif task == "resume":
        emit(work.resume(rest[0], int(rest[1])))
    elif task == "writer":
        emit(work.writer(rest[0], int(rest[1])))
    raise SystemExit(f"unknown worker task {task!r}")


# -- the orchestration (runs in the project's .venv) --------------------------------------------


@dataclass(frozen=True)
class Plan:
    rounds: int  # interleaved rounds of the per-step workers
    steps_n: int  # steps per workflow
    steps_reps: int  # timed workflows per worker process
    resume_n: int  # finished steps before the crash
    resume_reps: int
    imports: int
    writer_reps: int
    writer_secs: float
    writer_n: int  # steps per workflow of a writer
    floor_n: int


FULL = Plan(5, 100, 5, 1000, 5, 15, 3, 5.0, 100, 300)
QUICK = Plan(2, 50, 3, 1000, 1, 3, 1, 1.0, 50, 100)
# Prefect's steps cost milliseconds each and its server takes seconds to start: fewer of its
# repetitions fit in the same time (its figures say how many they are).
PREFECT_CAP = {"rounds": 2, "resume_reps": 2, "writer_reps": 1}


def python_of(peer: str) -> tuple[Path | None, str]:
    """The interpreter a peer runs in and where it comes from, or None and why not."""
    if peer == "letitloop":
        return Path(sys.executable), "this interpreter"
    venv = REPO / ".venvs" / f"peers-{peer}"
    python = venv / "bin" / "python"
    if (venv / ".installed").exists():
        return python, f".venvs/peers-{peer}"
    if peer == "langgraph":
        probe = [sys.executable, "-c", "import langgraph.checkpoint.sqlite"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return Path(sys.executable), "this interpreter (no .venvs/peers-langgraph)"
    return None, f"not installed: `make bench-peers` builds .venvs/peers-{peer}"


class Runner:
    """Starts workers in their own sessions and ends whatever they leave behind.

    They run in the scratch directory, whose folders are named store-PEER so that none shadows a
    package on the path of a ``python -c`` there."""

    def __init__(self, scratch: Path, env: dict[str, str]) -> None:
        self.scratch = scratch
        self.env = env

    def cmd(self, python: Path, peer: str, task: str, *args: str) -> list[str]:
        script = str(Path(__file__).resolve())
        return [str(python), script, "--worker", peer, task, str(self.scratch), *args]

    def run(
        self, python: Path, peer: str, task: str, *args: str, expect_kill: bool = False
    ) -> tuple[float, Any]:
        """(wall ms of the whole process, its JSON answer)."""
        cmd = self.cmd(python, peer, task, *args)
        # files, not pipes: a child the worker leaves behind (Prefect's server) would hold a
        # pipe open and keep a reader waiting for its end long after the worker exited
        out_path, err_path = self.scratch / "worker.out", self.scratch / "worker.err"
        with out_path.open("w") as out_file, err_path.open("w") as err_file:
            t = time.perf_counter()
            proc = subprocess.Popen(
                cmd,
                env=self.env,
                cwd=self.scratch,
                stdout=out_file,
                stderr=err_file,
                start_new_session=True,
            )
            try:
                proc.wait(timeout=1800)
            finally:
                wall = (time.perf_counter() - t) * 1e3
                self.end_group(proc.pid, peer)
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        out, err = out_path.read_text(), err_path.read_text()
        if expect_kill:
            if proc.returncode != -signal.SIGKILL:
                raise RuntimeError(f"{peer} {task} was not killed ({proc.returncode}):\n{err}")
            return wall, None
        if proc.returncode != 0 or not out.strip():
            raise RuntimeError(f"{peer} {task} failed ({proc.returncode}):\n{err[-3000:]}")
        return wall, json.loads(out.strip().splitlines()[-1])

    def end_group(self, pgid: int, peer: str) -> None:
        """Prefect's server outlives its parent: end the worker's whole session (not owners:
        letitloop's owner starts a session of its own)."""
        if peer == "prefect":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    def writers(self, python: Path, peer: str, n: int, secs: float, rep: int) -> dict[str, Any]:
        procs = []
        errs = [self.scratch / f"writer-{peer}-{rep}-{w}.err" for w in range(4)]
        for w in range(4):
            cmd = self.cmd(python, peer, "writer", f"{rep}-{w}", str(n))
            with errs[w].open("w") as err_file:  # the child holds its own copy
                procs.append(
                    subprocess.Popen(
                        cmd,
                        env=self.env,
                        cwd=self.scratch,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=err_file,
                        text=True,
                        start_new_session=True,
                    )
                )
        try:
            for proc, err in zip(procs, errs, strict=True):
                assert proc.stdout is not None
                if proc.stdout.readline().strip() != "ready":
                    raise RuntimeError(f"{peer} writer did not start:\n{err.read_text()[-3000:]}")
            t0 = time.time() + 0.2
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write(f"{t0!r} {t0 + secs!r}\n")
                proc.stdin.flush()
            outs = []
            for proc, err in zip(procs, errs, strict=True):
                assert proc.stdout is not None
                line = proc.stdout.readline()  # its answer; the pipe may outlive the worker
                if proc.wait(timeout=secs + 600) != 0 or not line.strip():
                    raise RuntimeError(f"{peer} writer failed:\n{err.read_text()[-3000:]}")
                outs.append(json.loads(line))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                self.end_group(proc.pid, peer)
        window = max(o["end"] for o in outs) - min(o["start"] for o in outs)
        steps = sum(o["steps"] for o in outs)
        return {"steps": steps, "window_s": window, "steps_per_s": steps / window}


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, check=False, capture_output=True, text=True)
    took = (time.perf_counter() - t) * 1e3
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def measure(plan: Plan, peers: list[str], scratch: Path, env: dict[str, str]) -> dict[str, Any]:
    from benchmarks.journal import code_version, fsync_floor, summary

    runner = Runner(scratch, env)
    pythons: dict[str, Path] = {}
    data: dict[str, Any] = {"peers": {}}
    for peer in PEERS:
        python, where = python_of(peer)
        entry: dict[str, Any] = {"title": TITLES[peer], "durability": DURABILITY[peer]}
        entry["front_door"] = FRONT_DOOR[peer]
        data["peers"][peer] = entry
        if peer not in peers:
            entry["skipped"] = "not selected (--only)"
        elif python is None:
            entry["skipped"] = where
        else:
            pythons[peer] = python
            entry["interpreter"] = where
            entry["versions"] = runner.run(python, peer, "versions")[1]
    for peer in PEERS:
        print(f"[{peer}] {data['peers'][peer].get('skipped') or 'runs'}", flush=True)
    data["meta"] = {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": code_version(),
        "quick": plan is QUICK,
        "plan": plan.__dict__,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.release()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs" + cpu_model(),
        "scratch_dir": str(scratch),
        "loadavg_start": os.getloadavg(),
    }
    floors: list[float] = []
    floors += fsync_floor(scratch, plan.floor_n)
    active = list(pythons)

    def cap(peer: str, field: str, value: int) -> int:
        return min(value, PREFECT_CAP[field]) if peer == "prefect" else value

    def fail(peer: str, what: str, err: Exception) -> None:
        """A peer that cannot run here drops out of the run, and the output says why."""
        last = [line for line in str(err).splitlines() if line.strip()][-1:] or [repr(err)]
        data["peers"][peer]["skipped"] = f"failed ({what}): {last[0].strip()}"
        active.remove(peer)
        print(f"[{peer}] {data['peers'][peer]['skipped']}", flush=True)

    # 1. per step, interleaved rounds of one worker process per peer
    per: dict[str, list[float]] = {p: [] for p in active}
    for r in range(plan.rounds):
        for peer in list(active):
            if r < cap(peer, "rounds", plan.rounds):
                try:
                    got = runner.run(
                        pythons[peer], peer, "steps", str(plan.steps_n), str(plan.steps_reps)
                    )
                except (RuntimeError, subprocess.SubprocessError) as err:
                    fail(peer, "per step", err)
                    continue
                per[peer] += got[1]["per_step_ms"]
        print(f"[steps] round {r + 1} of {plan.rounds}", flush=True)
    floors += fsync_floor(scratch, plan.floor_n)

    # 2. resume of 1000 finished steps in a fresh process after a SIGKILL in step 1001
    bare: dict[str, list[float]] = {p: [] for p in active}
    resume_in: dict[str, list[float]] = {p: [] for p in active}
    resume_proc: dict[str, list[float]] = {p: [] for p in active}
    for r in range(plan.resume_reps):
        for peer in list(active):
            if r >= cap(peer, "resume_reps", plan.resume_reps):
                continue
            run_id = f"resume-{r}-{uuid.uuid4().hex[:8]}"
            python, n = pythons[peer], str(plan.resume_n)
            try:
                runner.run(python, peer, "crash", run_id, n, expect_kill=True)
                bare[peer].append(timed([str(python), "-c", "pass"], env, scratch))
                wall, got = runner.run(python, peer, "resume", run_id, n)
            except (RuntimeError, subprocess.SubprocessError) as err:
                fail(peer, "resume", err)
                continue
            if got["executed"] != 1:
                raise RuntimeError(f"{peer} ran {got['executed']} steps again on resume, not 1")
            resume_in[peer].append(got["resume_ms"])
            resume_proc[peer].append(wall)
        print(f"[resume] round {r + 1} of {plan.resume_reps}", flush=True)
    floors += fsync_floor(scratch, plan.floor_n)

    # 3. import of each front door over a bare interpreter (the same interpreter)
    imports: dict[str, list[float]] = {p: [] for p in active}
    for peer in active:  # warm the page cache
        timed([str(pythons[peer]), "-c", FRONT_DOOR[peer]], env, scratch)
    for _ in range(plan.imports):
        for peer in active:
            py = str(pythons[peer])
            b = timed([py, "-c", "pass"], env, scratch)
            imports[peer].append(timed([py, "-c", FRONT_DOOR[peer]], env, scratch) - b)
            bare[peer].append(b)

    # 4. four writer processes on one store
    writers: dict[str, list[dict[str, Any]]] = {p: [] for p in active}
    for r in range(plan.writer_reps):
        for peer in list(active):
            if r < cap(peer, "writer_reps", plan.writer_reps):
                try:
                    burst = runner.writers(pythons[peer], peer, plan.writer_n, plan.writer_secs, r)
                except (RuntimeError, subprocess.SubprocessError, OSError) as err:
                    fail(peer, "4 writers", err)
                    continue
                writers[peer].append(burst)
        print(f"[writers] round {r + 1} of {plan.writer_reps}", flush=True)
    floors += fsync_floor(scratch, plan.floor_n)

    data["floor"] = summary(floors)
    data["meta"]["loadavg_end"] = os.getloadavg()
    for peer in active:
        entry = data["peers"][peer]
        entry["per_step"] = summary(per[peer])
        entry["resume_in_process"] = summary(resume_in[peer])
        entry["resume_process"] = summary(resume_proc[peer])
        entry["bare_interpreter"] = summary(bare[peer])
        entry["resume_process_over_bare_ms"] = med(resume_proc[peer]) - med(bare[peer])
        entry["import_over_bare"] = summary(imports[peer])
        entry["writers"] = {
            "runs": writers[peer],
            "steps_per_s": med([w["steps_per_s"] for w in writers[peer]]),
        }
    data["figures"] = figures(data)
    return data


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f" ({line.split(':', 1)[1].strip()})"
    return ""


FIGURES = (
    ("per_step_ms", "per step, N={n}, 20 B outputs", "ms"),
    ("resume_in_process_ms", "resume of {r} finished steps, the call in a fresh process", "ms"),
    ("resume_process_over_bare_ms", "resume of {r} steps, whole fresh process, over bare", "ms"),
    ("import_over_bare_ms", "import of the front door, over bare", "ms"),
    ("writers_steps_per_s", "4 writer processes, one store", "/s"),
)


def figures(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each figure's median per peer and its ratio to letitloop's (peer / letitloop)."""
    out: dict[str, dict[str, Any]] = {}
    for key, _label, _unit in FIGURES:
        values: dict[str, float | None] = {}
        for peer, entry in data["peers"].items():
            if "per_step" not in entry:
                values[peer] = None
                continue
            values[peer] = {
                "per_step_ms": entry["per_step"]["median"],
                "resume_in_process_ms": entry["resume_in_process"]["median"],
                "resume_process_over_bare_ms": entry["resume_process_over_bare_ms"],
                "import_over_bare_ms": entry["import_over_bare"]["median"],
                "writers_steps_per_s": entry["writers"]["steps_per_s"],
            }[key]
        base = values.get("letitloop")
        ratios = {p: (v / base if v is not None and base else None) for p, v in values.items()}
        out[key] = {"median": values, "ratio_to_letitloop": ratios}
    return out


def fmt(value: float | None, unit: str) -> str:
    if value is None or value != value:
        return "n/a"
    if unit == "/s":
        return f"{value:,.0f} steps/s"
    if value < 10:
        return f"{value:.3f} ms"
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def markdown(data: dict[str, Any]) -> str:
    """The comparison table for the top-level README, with its date, commit and machine."""
    plan, meta, fl = data["meta"]["plan"], data["meta"], data["floor"]["median"]
    peers = list(data["peers"])
    head = "| | " + " | ".join(data["peers"][p]["title"] for p in peers) + " |"
    lines = [head, "|---" * (len(peers) + 1) + "|"]
    for key, label, unit in FIGURES:
        fig = data["figures"][key]
        cells = []
        for p in peers:
            value, ratio = fig["median"][p], fig["ratio_to_letitloop"][p]
            if value is None:
                cells.append("not run")
                continue
            cell = fmt(value, unit)
            if key == "per_step_ms":
                cell += f" ({value / fl:.1f}{TIMES} fsync)"
            if p != "letitloop" and ratio is not None:
                cell += f", {ratio:.2f}{TIMES} ours"
            cells.append(cell)
        text = label.format(n=plan["steps_n"], r=plan["resume_n"])
        lines.append(f"| {text} | " + " | ".join(cells) + " |")
    versions = []
    for p in peers:
        entry = data["peers"][p]
        if "versions" in entry:
            pk = entry["versions"]["packages"]
            versions.append(", ".join(f"{k} {v}" for k, v in pk.items()))
    skipped = [
        f"{data['peers'][p]['title']}: {data['peers'][p]['skipped']}"
        for p in peers
        if "skipped" in data["peers"][p]
    ]
    lines.append("")
    lines.append(
        f"`benchmarks/peers.py{' --quick' if meta['quick'] else ''}`, {meta['date'][:10]}, commit "
        f"{meta['commit']}, {meta['machine']}, Python {meta['python']}, fsync floor "
        f"{fl:.3f} ms, load {meta['loadavg_start'][0]:.1f} → {meta['loadavg_end'][0]:.1f}; "
        + "; ".join(versions)
        + ("." if not skipped else "; not run: " + "; ".join(skipped) + ".")
    )
    return "\n".join(lines)


def report(data: dict[str, Any]) -> str:
    lines = [f"fsync floor (append 200 B + fdatasync): {data['floor']['median']:.3f} ms"]
    for peer, entry in data["peers"].items():
        lines.append(f"\n{entry['title']}: {entry.get('skipped') or entry['durability']}")
        if "per_step" not in entry:
            continue
        for key, label, unit in FIGURES:
            fig = data["figures"][key]
            value, ratio = fig["median"][peer], fig["ratio_to_letitloop"][peer]
            text = label.format(
                n=data["meta"]["plan"]["steps_n"], r=data["meta"]["plan"]["resume_n"]
            )
            extra = "" if peer == "letitloop" or ratio is None else f"  ({ratio:.2f}x letitloop)"
            lines.append(f"  {text}: {fmt(value, unit)}{extra}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repetition of each (a smoke run)")
    parser.add_argument("--only", help=f"comma-separated peers (of {', '.join(PEERS)})")
    parser.add_argument("--json", metavar="OUT", help="write every number to this JSON file")
    parser.add_argument("--dir", help="where the scratch directory goes (default <repo>/.bench)")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait up to this long for the CPUs to be >= 90%% idle (a shared machine)",
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        peer, task, scratch, *rest = args.worker
        worker_main(peer, task, Path(scratch), rest)
        return 0
    peers = PEERS if not args.only else tuple(args.only.split(","))
    unknown = set(peers) - set(PEERS)
    if unknown:
        parser.error(
            f"unknown peer(s) {', '.join(sorted(unknown))}; choose from {', '.join(PEERS)}"
        )
    sys.path.insert(0, str(REPO))
    from benchmarks.journal import stop_owner_hard, wait_quiet

    idle = wait_quiet(args.wait_quiet) if args.wait_quiet else None
    base = Path(args.dir).resolve() if args.dir else REPO / ".bench"
    base.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="peers-", dir=base))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LIL_JOURNAL")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measured as installed packages run: compiled once
    env |= {
        "PYTHONPYCACHEPREFIX": str(scratch / "pycache"),
        "LIL_KEY_DIR": str(scratch / "keys"),
        "LIL_OWNER_IDLE": "900",
        "PREFECT_HOME": str(scratch / "store-prefect"),
        "PREFECT_LOCAL_STORAGE_PATH": str(scratch / "store-prefect" / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        # its temporary server runs migrations on first start: far beyond the 20 s default here
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "600",
        "DO_NOT_TRACK": "1",
    }
    env.pop("PREFECT_API_URL", None)
    os.environ["LIL_KEY_DIR"] = env["LIL_KEY_DIR"]  # this process stops the owner at the end
    (scratch / "store-letitloop").mkdir()
    started = time.perf_counter()
    try:
        data = measure(QUICK if args.quick else FULL, list(peers), scratch, env)
    finally:
        stop_owner_hard(scratch / "store-letitloop" / "journal.duckdb")
        shutil.rmtree(scratch, ignore_errors=True)
    data["meta"]["duration_s"] = round(time.perf_counter() - started, 1)
    data["meta"]["cpu_idle_at_start"] = idle
    data["markdown"] = markdown(data)
    print()
    print(report(data))
    print("\nfor the README (paste as is):\n")
    print(data["markdown"])
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
        print(f"\nnumbers written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
