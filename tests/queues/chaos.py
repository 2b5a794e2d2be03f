"""Queue chaos on real processes: ``lil worker`` processes drain queued runs while the test
SIGKILLs them, and a counting server on 127.0.0.1 sees every step execution, every side effect
and how many steps run at once (fleet-wide and per worker process).

Used by tests/queues/test_queue_chaos.py (CI size) and benchmarks/queue_chaos.py (1,000 runs).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = str(Path(__file__).resolve().parents[2])
LIL = str(Path(sys.executable).with_name("lil"))

FLOW = '''
"""The chaos workflow: two counted steps around a side effect, reported to the counting server."""
import json
import os
import time
import urllib.request

from letitloop import Queue, atomic_marker, durable, step
from letitloop.kernel import current_run

SERVER = os.environ["CHAOS_SERVER"]
QUEUE = Queue("chaos", concurrency=int(os.environ.get("CHAOS_CONCURRENCY", "6")),
              per_worker=int(os.environ.get("CHAOS_PER_WORKER", "2")))


def call(path, body):
    req = urllib.request.Request(SERVER + path, data=json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def work(n, name, seconds):
    pid = os.getpid()
    call("/step", {"run": n, "name": name, "pid": pid})
    call("/enter", {"pid": pid})
    try:
        time.sleep(seconds)
    finally:
        call("/leave", {"pid": pid})
    return n


def reconcile(marker):
    return "done" if call("/applied", {"key": marker.run_id})["applied"] else "redo"


@durable
def job(n, seconds=0.02):
    step("prepare", work, n, "prepare", seconds)
    with atomic_marker("charge", reconcile=reconcile) as go:
        if go:
            call("/effect", {"key": current_run.get().run_id, "run": n, "pid": os.getpid()})
    step("finish", work, n, "finish", seconds)
    return n * 2
'''


@dataclass
class Counts:
    """What the counting server saw."""

    executions: dict[tuple[int, str], list[int]] = field(default_factory=lambda: defaultdict(list))
    started: dict[tuple[int, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    effects: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    effect_calls: int = 0
    now: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    max_total: int = 0
    max_per_pid: int = 0
    dead: dict[int, float] = field(default_factory=dict)  # pid: when the test saw it die
    late_enters: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def forget(self, pid: int) -> None:
        """A killed worker's steps are not running any more, nor any it asked to enter before
        its death that the server reads only now."""
        with self.lock:
            self.now.pop(pid, None)
            self.dead[pid] = time.monotonic()


def _handler(counts: Counts) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer: dict[str, Any] = {"ok": True}
            with counts.lock:
                if self.path == "/step":
                    counts.executions[(body["run"], body["name"])].append(body["pid"])
                    counts.started[(body["run"], body["name"])].append(time.monotonic())
                elif self.path == "/enter" and body["pid"] in counts.dead:
                    counts.late_enters += 1  # sent before its SIGKILL, read after: not running
                elif self.path == "/enter":
                    counts.now[body["pid"]] += 1
                    counts.max_per_pid = max(counts.max_per_pid, counts.now[body["pid"]])
                    counts.max_total = max(counts.max_total, sum(counts.now.values()))
                elif self.path == "/leave":
                    if counts.now.get(body["pid"], 0) > 0:
                        counts.now[body["pid"]] -= 1
                elif self.path == "/effect":
                    counts.effect_calls += 1
                    counts.effects[body["key"]] += 1  # applied once per key, like an API's
                elif self.path == "/applied":
                    answer["applied"] = counts.effects.get(body["key"], 0) > 0
            data = json.dumps(answer).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # its worker was SIGKILLed after asking: what it asked is counted

    return Handler


@contextmanager
def counting_server() -> Iterator[tuple[str, Counts]]:
    counts = Counts()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(counts))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", counts
    finally:
        server.shutdown()
        server.server_close()


class Fleet:
    """``lil worker`` processes on one journal, started and killed by the test."""

    def __init__(self, workdir: Path, journal: str, server: str, ttl: float, **env: str) -> None:
        self.workdir, self.journal = workdir, journal
        self.env = {
            **os.environ,
            "PYTHONPATH": f"{workdir}{os.pathsep}{ROOT}",
            "LIL_JOURNAL": journal,
            "CHAOS_SERVER": server,
            "LIL_LEASE_TTL": str(ttl),
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def start(
        self, concurrency: int = 2, grace: float = 30.0, queue: str = "chaos"
    ) -> subprocess.Popen[bytes]:
        log = self.workdir / f"worker-{len(self.logs)}.log"
        self.logs.append(log)
        with open(log, "wb") as f:
            proc = subprocess.Popen(
                [LIL, "worker", "--queue", queue, "--concurrency", str(concurrency)]
                + ["--grace", str(grace)],
                cwd=self.workdir,
                env=self.env,
                stdout=f,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        return proc

    def live(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.poll() is None]

    def kill_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                p.kill()
            p.wait(30)

    def output(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for log in self.logs)


def write_flow(workdir: Path) -> None:
    (workdir / "chaosflow.py").write_text(textwrap.dedent(FLOW))


def metrics_journal(workdir: Path) -> tuple[Path, dict[str, str]]:
    """A DuckDB journal in ``workdir`` with 3 completed runs and 4 runs waiting in the queue
    ``chaos``, and the environment that finds it (what the metrics tests scrape)."""
    (workdir / ".letitloop").mkdir()
    journal_path = workdir / ".letitloop" / "journal.duckdb"
    write_flow(workdir)
    env = {
        **os.environ,
        "PYTHONPATH": f"{workdir}{os.pathsep}{ROOT}",
        "LIL_JOURNAL": str(journal_path),
        "CHAOS_SERVER": "http://127.0.0.1:9",  # never called: these runs only wait in the queue
    }
    code = (
        "import chaosflow\nfrom letitloop import durable, step\n"
        "@durable\ndef quick(x):\n    return step('one', lambda v: v + 1, x)\n"
        "for i in range(3):\n    quick(i)\n"
        "for i in range(4):\n    chaosflow.QUEUE.enqueue(chaosflow.job, i)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env, check=True, timeout=120)
    return journal_path, env


def enqueue_all(workdir: Path, env: dict[str, str], n: int, seconds: float) -> None:
    """Enqueue ``n`` runs from a process of their own (as an application would)."""
    code = (
        "import chaosflow\n"
        f"for i in range({n}):\n"
        f"    chaosflow.QUEUE.enqueue(chaosflow.job, i, {seconds})\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env, check=True, timeout=300)


def unfinished(journal: Any) -> int:
    return sum(q.queued + q.claimed for q in journal.queues() if q.spec.name == "chaos")


def chaos(
    workdir: Path,
    journal_spec: str,
    journal: Any,
    *,
    runs: int,
    kills: int,
    workers: int = 4,
    ttl: float = 1.5,
    seconds: float = 0.02,
    deadline: float = 600.0,
    seed: int = 32,
) -> dict[str, Any]:
    """Drain ``runs`` queued runs with ``workers`` workers while SIGKILLing one at random
    ``kills`` times (a whole-fleet kill half-way counts as ``workers`` of them); return what
    the server and the journal say."""
    rng = random.Random(seed)
    write_flow(workdir)
    with counting_server() as (url, counts):
        fleet = Fleet(workdir, journal_spec, url, ttl)
        killed: set[int] = set()
        try:
            enqueue_all(workdir, fleet.env, runs, seconds)
            for _ in range(workers):
                fleet.start()
            done_kills, fleet_killed, last_kill = 0, False, 0.0
            t0 = time.monotonic()
            while unfinished(journal) and time.monotonic() - t0 < deadline:
                time.sleep(rng.uniform(0.15, 0.5))
                if done_kills >= kills:
                    continue
                if not fleet_killed and done_kills >= kills // 2:
                    for p in fleet.live():  # the whole fleet at once, then a fresh one
                        p.kill()
                        p.wait(30)
                        killed.add(p.pid)
                        counts.forget(p.pid)
                        done_kills += 1
                    fleet_killed, last_kill = True, time.monotonic() - t0
                    for _ in range(workers):
                        fleet.start()
                    continue
                victim = rng.choice(fleet.live())
                victim.kill()
                victim.wait(30)
                killed.add(victim.pid)
                counts.forget(victim.pid)
                done_kills += 1
                last_kill = time.monotonic() - t0
                fleet.start()
            left = unfinished(journal)
            elapsed = time.monotonic() - t0
        finally:
            fleet.kill_all()
        r = report(journal, counts, killed, runs, done_kills, left, elapsed, fleet)
        r.update(fleet_killed=fleet_killed, last_kill=last_kill)
        return r


def report(
    journal: Any, counts: Counts, killed: set[int], runs: int, kills: int, left: int,
    elapsed: float, fleet: Fleet,
) -> dict[str, Any]:  # fmt: skip
    """The bar's numbers: unfinished runs, steps run again without their executor being
    killed before the next execution began (acknowledged steps lost, or a live worker's run
    taken over), re-executions, duplicate effects, the limits seen."""
    unexplained = []
    reexecutions = 0
    for (run, name), pids in counts.executions.items():
        reexecutions += len(pids) - 1
        starts = counts.started[(run, name)]
        # each execution but the last was cut short: its worker was killed before the next began
        for pid, again in zip(pids[:-1], starts[1:], strict=True):
            if pid not in killed or counts.dead.get(pid, again) >= again:
                unexplained.append((run, name, pids))
    items = journal.queue_items(queue="chaos", limit=100_000)
    results = journal.results([i.run_id for i in items])
    return {
        "runs": runs,
        "kills": kills,
        "left": left,
        "elapsed": elapsed,
        "completed": len(results),
        "reexecutions": reexecutions,
        "unexplained_reexecutions": unexplained,
        "duplicate_effects": sum(n - 1 for n in counts.effects.values() if n > 1),
        "effects": len(counts.effects),
        "effect_calls": counts.effect_calls,
        "max_total": counts.max_total,
        "max_per_pid": counts.max_per_pid,
        "late_enters": counts.late_enters,  # from killed workers, read after their death
        "output": fleet.output,
    }
