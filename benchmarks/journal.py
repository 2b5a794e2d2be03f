"""Benchmark of letitloop's journal: one run, one disk, each figure against its fsync floor.

    python benchmarks/journal.py [--quick] [--json OUT] [--dir DIR] [--wait-quiet S]
                                 [--skip-tui] [--skip-langgraph]

Every figure is compared with the fsync floor measured in the same run, in the same directory as
the journals (append 200 B + fdatasync): that is the least a durable write can cost on this disk.
What each figure means is in ``benchmarks/README.md``. All scratch data (journals, keys, probe
files) lives in one temporary directory under ``--dir`` (default ``<repo>/.bench``), on the same
filesystem as the repository, and is removed at the end together with the owners started here.
Two figures come from the neighbouring scripts, run as subprocesses with ``--json``:
``benchmarks/langgraph.py`` (the LangGraph saver against SqliteSaver) and ``benchmarks/tui.py``
(``lil-tui`` opening 10,000 runs / 1M events; that journal takes minutes to build, so it is kept
under ``<repo>/.bench/tui-10k/`` and reused by the next run).

The script also runs as its own helper process: ``--worker writer ...`` (one of the concurrent
writers). That mode is internal.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import json
import math
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

SMALL = "0123456789abcdefghij"  # a 20-byte step output
BIG = base64.b64encode(os.urandom(75 * 1024)).decode("ascii")[: 100 * 1024]  # a 100 KB str
RESUME_STEPS = 1000

# The bars (issue #21): limits of the figures marked with ✔/✘.
BARS = {
    "per_step": 2.0,  # x fsync floor, 20 B outputs
    "per_step_100KB": 2.0,  # x a 100 KB append + fdatasync, 100 KB outputs
    "scaling": 0.25,  # per-step overhead at N=1000 within 25% of N=10, either way
    "resume_in_process_ms": 2.0,
    "resume_fresh_over_bare_ms": 25.0,  # owner running
    "resume_cold_over_bare_ms": 100.0,  # owner not running: the probe starts it
    "import_api_ms": 15.0,  # from letitloop import durable, step, over a bare interpreter
    "journal_size": 2.0,  # x payload bytes
    "first_read_after_burst_ms": 50.0,
    "writers_steps_per_s": 8000.0,
    "langgraph_ratio": 1.0,  # our saver per node / SqliteSaver's, sync and async
    "langgraph_latest_read_ms": 1.0,
    "tui_open_ms": 250.0,  # lil-tui on 10,000 runs / 1M events: first rows on screen
}
TUI_CACHE = REPO / ".bench" / "tui-10k"  # the big journal of benchmarks/tui.py, built once

# A fresh process that replays the 1000 completed steps of an unfinished run and stops where the
# run failed before (its step 1001 raises again). It prints how many step functions ran: 1.
RESUME_PROBE = """\
import sys
from letitloop import durable, step

ran = []

def produce(i):
    ran.append(i)
    if i >= {n}:
        raise RuntimeError("step {n} fails on every attempt")
    return {small!r}

@durable(journal=sys.argv[1], run_id="resume", name="bench.resume")
def wf():
    for i in range({n} + 1):
        step(f"s{{i}}", produce, i)

try:
    wf()
except RuntimeError:
    pass
print(len(ran))
"""


# -- statistics and the report -----------------------------------------------------------------


def pct(xs: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1)."""
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def summary(xs: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(xs),
        "median": statistics.median(xs),
        "p90": pct(xs, 0.9),
        "min": min(xs),
        "max": max(xs),
    }


@dataclass
class Row:
    label: str
    median: float
    unit: str = "ms"
    p90: float | None = None
    ratio: float | None = None  # to the fsync floor
    bar: str = ""
    ok: bool | None = None


@dataclass
class Report:
    quick: bool
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    floor_ms: float = float("nan")

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        mark = "" if row.ok is None else ("  ✔" if row.ok else "  ✘")
        print(f"  {row.label}: {fmt(row.median, row.unit)}{mark}", flush=True)
        return row

    def table(self) -> str:
        head = ("measurement", "median", "p90", "x floor", "bar", "")
        lines = [head]
        for r in self.rows:
            lines.append(
                (
                    r.label,
                    fmt(r.median, r.unit),
                    "" if r.p90 is None else fmt(r.p90, r.unit),
                    "" if r.ratio is None else f"{r.ratio:.1f}x",
                    r.bar,
                    "" if r.ok is None else ("✔" if r.ok else "✘"),
                )
            )
        widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
        out = []
        for i, line in enumerate(lines):
            pairs = zip(line, widths, strict=True)
            cells = [c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(pairs)]
            out.append("  ".join(cells).rstrip())
            if i == 0:
                out.append("  ".join("-" * w for w in widths))
        return "\n".join(out)


def fmt(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:.3f} ms" if value < 10 else f"{value:.1f} ms"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "/s":
        return f"{value:,.0f} /s"
    if unit == "MB":
        return f"{value:.2f} MB"
    if unit == "records":
        return f"{value:.2f}"
    return f"{value:g} {unit}"


# -- measurements ------------------------------------------------------------------------------


def fsync_floor(directory: Path, n: int, size: int = 200) -> list[float]:
    """Append `size` bytes + fdatasync, n times, in the journals' directory (ms each)."""
    probe = directory / "floor.probe"
    rec = os.urandom(size)
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    times = []
    try:
        for _ in range(n):
            t = time.perf_counter()
            os.write(fd, rec)
            os.fdatasync(fd)
            times.append((time.perf_counter() - t) * 1e3)
    finally:
        os.close(fd)
        probe.unlink()
    return times


def duckdb_commit(directory: Path, n: int) -> list[float]:
    """BEGIN / INSERT one ~200 B row / COMMIT on a held DuckDB connection (ms each)."""
    import duckdb

    path = directory / "raw.duckdb"
    con = duckdb.connect(str(path))
    times = []
    try:
        con.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER, run VARCHAR, payload BLOB)")
        base = con.execute("SELECT count(*) FROM t").fetchone()[0]
        for i in range(n):
            row = [base + i, "run-0", os.urandom(200)]
            t = time.perf_counter()
            con.execute("BEGIN")
            con.execute("INSERT INTO t VALUES (?, ?, ?)", row)
            con.execute("COMMIT")
            times.append((time.perf_counter() - t) * 1e3)
    finally:
        con.close()
    return times


def plain_step(name: str, fn: Callable[..., Any], /, *args: Any) -> Any:
    """What a step is without letitloop: just the call."""
    return fn(*args)


def body(step_fn: Callable[..., Any], n: int, produce: Callable[[int], str]) -> int:
    """The workflow body of the per-step measurement: n steps, each returning one output."""
    total = 0
    for i in range(n):
        total += len(step_fn(f"s{i}", produce, i))
    return total


def per_step(journal: Path, n: int, payload: str, tag: str) -> tuple[float, float]:
    """One repetition: (letitloop wall, plain wall) in ms for an n-step run with fresh run id."""
    from letitloop import durable, step

    def produce(i: int) -> str:
        return payload

    @durable(journal=str(journal), run_id=f"{tag}-{uuid.uuid4().hex[:8]}", name="bench.steps")
    def wf() -> int:
        return body(step, n, produce)

    t = time.perf_counter()
    body(plain_step, n, produce)
    plain = time.perf_counter() - t
    t = time.perf_counter()
    got = wf()
    lil = time.perf_counter() - t
    assert got == n * len(payload), got
    return lil * 1e3, plain * 1e3


def acked_appends(journal: Path, n: int) -> list[float]:
    """n sequential acked appends of one step-completion record (20 B output), ms each.

    The protocol's own floor: client pack, socket round trip, owner checks, log write and
    fdatasync, reply. A step sends one of these and one unacked "started" record.
    """
    from letitloop import open_journal

    j = open_journal(journal)
    run_id = f"bench.ack:{uuid.uuid4().hex[:8]}"
    state = j.open_run(run_id=run_id, workflow="bench.ack", key=run_id)
    fp = "0" * 32  # a step's argument fingerprint; its value does not matter here
    out = json.dumps(SMALL).encode()
    times = []
    try:
        for pos in range(n + 20):
            rec = {"k": "ok", "run": run_id, "epoch": state.epoch, "pos": pos, "att": 1}
            rec.update(kind="step", name=f"s{pos}", fp=fp, ts=time.time())
            rec.update(codec="json", out=out, next=None)
            t = time.perf_counter()
            j.append([rec])
            if pos >= 20:  # warm-up
                times.append((time.perf_counter() - t) * 1e3)
    finally:
        j.release_run(run_id)
    return times


def resume_workflow(journal: Path) -> tuple[Callable[[], None], list[int], list[float]]:
    """The in-process twin of RESUME_PROBE: 1000 steps, then a step that always raises.

    The third list receives the moment step 1001 starts: the replay of 1000 steps is over then
    (what follows, journaling the failure again, is not resume work)."""
    from letitloop import durable, step

    ran: list[int] = []
    reached: list[float] = []

    def produce(i: int) -> str:
        ran.append(i)
        if i >= RESUME_STEPS:
            reached.append(time.perf_counter())
            raise RuntimeError(f"step {RESUME_STEPS} fails on every attempt")
        return SMALL

    @durable(journal=str(journal), run_id="resume", name="bench.resume")
    def wf() -> None:
        for i in range(RESUME_STEPS + 1):
            step(f"s{i}", produce, i)

    return wf, ran, reached


def timed_run(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = (time.perf_counter() - t) * 1e3
    if proc.returncode != 0:
        raise RuntimeError(f"{args} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout.strip()


def code_version() -> str:
    """The commit measured, with "+dirty" if letitloop/ has uncommitted changes."""
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


def cpu_idle(seconds: float = 1.0) -> float | None:
    """Fraction of all CPUs' time spent idle over `seconds` (Linux /proc/stat), else None."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return fields[3] + fields[4], sum(fields)  # idle + iowait, total

    try:
        idle0, total0 = sample()
        time.sleep(seconds)
        idle1, total1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return (idle1 - idle0) / max(total1 - total0, 1)


class CpuMeter:
    """How much of the CPUs other processes used while the benchmark ran (Linux only).

    All busy time of the machine (/proc/stat) minus this process and every child it waited
    for (os.times), minus owners that outlived the helper process that started them (sampled
    just before they are stopped), minus kernel threads (which include the disk's own work).
    """

    def __init__(self) -> None:
        self.hz = os.sysconf("SC_CLK_TCK")
        self.orphan_s = 0.0
        self.start = self._sample()

    def _sample(self) -> tuple[float, float, float, float]:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        busy = (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / self.hz  # idle and iowait left out
        kthreads = 0
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    f = _proc_stat(int(entry.name))
                    if int(f[1]) == 2 or entry.name == "2":
                        kthreads += int(f[11]) + int(f[12])
        t = os.times()
        mine = t.user + t.system + t.children_user + t.children_system
        return time.monotonic(), busy, kthreads / self.hz, mine

    def before_stop(self, pid: int) -> None:
        """An owner is about to stop: count its CPU as ours if no process of ours reaps it."""
        with contextlib.suppress(OSError, ValueError, IndexError):
            f = _proc_stat(pid)
            if int(f[1]) != os.getpid():
                self.orphan_s += (int(f[11]) + int(f[12])) / self.hz

    def others_share(self) -> float:
        now = self._sample()
        wall = now[0] - self.start[0]
        busy, kthreads, mine = (now[i] - self.start[i] for i in (1, 2, 3))
        others = busy - kthreads - mine - self.orphan_s
        return max(0.0, others) / max(wall * (os.cpu_count() or 1), 1e-9)


def _proc_stat(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (state is [0], ppid [1], utime [11])."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()


METER: CpuMeter | None = None


def wait_quiet(limit: float) -> float | None:
    """Wait up to `limit` s for two 1-second probes in a row with the CPUs >= 90% idle.

    Returns the idle share of the last probe (None where /proc/stat is missing).
    """
    deadline = time.monotonic() + limit
    idle = cpu_idle()
    quiet = 0
    while idle is not None and time.monotonic() < deadline:
        quiet = quiet + 1 if idle >= 0.9 else 0
        if quiet >= 2:
            break
        print(f"waiting for a quiet machine: CPUs {idle:.0%} idle", flush=True)
        idle = cpu_idle()
    return idle


def dir_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return 0


# -- the concurrent writer (a helper process) ---------------------------------------------------


def writer_main(journal: str, run_id: str, t0: float, t1: float) -> None:
    """Run one workflow that takes durable steps from wall time t0 until t1; print its counts."""
    from letitloop import durable, open_journal, step

    open_journal(journal)  # connected (and the runtime imported) before the start signal
    lat: list[float] = []

    def produce(i: int) -> str:
        return SMALL

    @durable(journal=journal, run_id=run_id, name="bench.writer")
    def wf() -> int:
        i = 0
        while time.time() < t1:
            t = time.perf_counter()
            step(f"s{i}", produce, i)
            lat.append((time.perf_counter() - t) * 1e3)
            i += 1
        return i

    time.sleep(max(0.0, t0 - time.time()))
    start = time.time()
    n = wf()
    end = time.time()
    print(json.dumps({"steps": n, "start": start, "end": end, "lat": lat}))


# -- owners and cleanup -------------------------------------------------------------------------


def stop_owner_hard(journal: Path) -> None:
    """Stop a journal's owner; if it does not answer, end it by the pid in its pid file."""
    from letitloop.journal._config import JournalPaths
    from letitloop.journal.duckdb._client import stop_owner

    pid_file = JournalPaths(journal).pid_file
    if METER is not None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            METER.before_stop(int(json.loads(pid_file.read_text())["pid"]))
    with contextlib.suppress(Exception):
        if stop_owner(journal) is not None:
            return
    with contextlib.suppress(Exception):
        pid = int(json.loads(pid_file.read_text())["pid"])
        os.kill(pid, signal.SIGTERM)
        for _ in range(200):  # os.kill(pid, 0) raises once the process is gone
            os.kill(pid, 0)
            time.sleep(0.025)
        os.kill(pid, signal.SIGKILL)


# -- the run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    floor_n: int
    duck_n: int
    duck_blocks: int
    step_reps: int
    resume_in: int
    resume_fresh: int
    resume_cold: int
    imports: int
    size_small: int  # steps of 1 KB
    size_big: int  # steps of 100 KB
    writer_reps: int
    writer_secs: float


FULL = Plan(300, 200, 3, 15, 40, 15, 9, 21, 1000, 100, 3, 5.0)
QUICK = Plan(200, 100, 1, 3, 5, 3, 2, 7, 200, 20, 1, 2.0)


def run(args: argparse.Namespace) -> Report:
    plan = QUICK if args.quick else FULL
    rep = Report(args.quick)
    idle = wait_quiet(args.wait_quiet)
    base = Path(args.dir).resolve() if args.dir else REPO / ".bench"
    made_base = not base.exists()
    base.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="journal-", dir=base))
    journals: list[Path] = []
    children: list[subprocess.Popen[str]] = []
    os.environ["LIL_KEY_DIR"] = str(scratch / "keys")  # no key lands in ~/.config
    os.environ["LIL_OWNER_IDLE"] = "900"
    os.environ.pop("LIL_JOURNAL", None)
    # Fresh interpreters (and the owners they start) read and write their bytecode cache in the
    # scratch directory: measured as an installed package runs (compiled once), whatever
    # PYTHONDONTWRITEBYTECODE says, without writing __pycache__ into the repository.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    global METER
    with contextlib.suppress(OSError, ValueError):
        METER = CpuMeter()
    try:
        measure(plan, rep, scratch, journals, children, env, args.skip_langgraph, args.skip_tui)
        rep.data["meta"]["cpu_idle_at_start"] = idle
    finally:
        for proc in children:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for journal in journals:
            stop_owner_hard(journal)
        shutil.rmtree(scratch, ignore_errors=True)
        if made_base:
            with contextlib.suppress(OSError):
                base.rmdir()
    rep.data["meta"]["duration_s"] = round(time.perf_counter() - started, 1)
    if METER is not None:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:  # stopped owners not reaped yet: count them
                pass
        rep.data["meta"]["other_processes_cpu_share"] = METER.others_share()
    rep.data["meta"]["cpu_idle_after"] = cpu_idle()
    return rep


def measure(
    plan: Plan,
    rep: Report,
    scratch: Path,
    journals: list[Path],
    children: list[subprocess.Popen[str]],
    env: dict[str, str],
    skip_langgraph: bool = False,
    skip_tui: bool = False,
) -> None:
    import duckdb
    import msgpack

    data = rep.data
    data["meta"] = {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": code_version(),
        "quick": rep.quick,
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "msgpack": ".".join(map(str, msgpack.version)),
        "machine": f"{platform.system()} {platform.release()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs",
        "scratch_dir": str(scratch),
        "plan": plan.__dict__,
        "loadavg_start": os.getloadavg(),
    }
    floors: list[list[float]] = []

    def floor_block(label: str) -> None:
        xs = fsync_floor(scratch, plan.floor_n)
        floors.append(xs)
        print(f"[floor] {label}: median {statistics.median(xs):.3f} ms", flush=True)

    # 1. fsync floor (more blocks follow between the sections; all blocks make the floor)
    print(f"scratch: {scratch}", flush=True)
    floor_block("block 1")

    floor_big = fsync_floor(scratch, plan.floor_n // 3, 100 * 1024)  # info, for 100 KB outputs

    # 2. raw DuckDB commit on a held connection
    duck: list[float] = []
    for _ in range(plan.duck_blocks):
        duck += duckdb_commit(scratch, plan.duck_n)

    # 3. per-step overhead, owner already running
    from letitloop import open_journal

    journal = scratch / "steps" / "journal.duckdb"
    journals.append(journal)
    t = time.perf_counter()
    open_journal(journal)
    data["owner_cold_start_ms"] = round((time.perf_counter() - t) * 1e3, 1)
    print(f"[owner] started and connected in {data['owner_cold_start_ms']} ms", flush=True)
    configs = [(10, "small"), (100, "small"), (1000, "small"), (10, "100KB"), (100, "100KB")]
    payloads = {"small": SMALL, "100KB": BIG}
    acks = acked_appends(journal, plan.floor_n)
    for n, kind in configs:  # warm-up, not counted
        per_step(journal, n, payloads[kind], f"warm-{n}-{kind}")
    samples: dict[tuple[int, str], list[tuple[float, float]]] = {c: [] for c in configs}
    for r in range(plan.step_reps):
        for n, kind in configs:  # interleaved, so a noisy spell of the disk hits all alike
            samples[(n, kind)].append(per_step(journal, n, payloads[kind], f"{n}-{kind}-{r}"))
        if r == plan.step_reps // 2:
            floor_block("block 2")

    # 4. resume of 1000 completed steps of an unfinished run
    wf, ran, reached = resume_workflow(journal)
    with contextlib.suppress(RuntimeError):
        wf()  # executes 1000 steps, then step 1001 raises: the run is failed
    assert ran == [*range(RESUME_STEPS + 1)], len(ran)
    resume_in: list[float] = []
    for i in range(plan.resume_in + 2):
        ran.clear()
        reached.clear()
        t = time.perf_counter()
        with contextlib.suppress(RuntimeError):
            wf()
        elapsed = (reached[-1] - t) * 1e3  # from the call until step 1001 starts
        assert ran == [RESUME_STEPS], ran  # only the failing step ran again
        if i >= 2:  # two warm-up calls
            resume_in.append(elapsed)
    probe = scratch / "resume_probe.py"
    probe.write_text(RESUME_PROBE.format(n=RESUME_STEPS, small=SMALL))
    probe_args = [sys.executable, str(probe), str(journal)]
    timed_run(probe_args, env, scratch)  # warm the page cache for the interpreter and modules
    bare: list[float] = []  # python -c pass, interleaved with the fresh processes
    py = sys.executable
    resume_fresh: list[float] = []
    for _ in range(plan.resume_fresh):
        bare.append(timed_run([py, "-c", "pass"], env, scratch)[0])
        elapsed, out = timed_run(probe_args, env, scratch)
        assert out == "1", out
        resume_fresh.append(elapsed)
    resume_cold: list[float] = []
    for _ in range(plan.resume_cold):
        stop_owner_hard(journal)
        bare.append(timed_run([py, "-c", "pass"], env, scratch)[0])
        elapsed, out = timed_run(probe_args, env, scratch)
        assert out == "1", out
        resume_cold.append(elapsed)
    floor_block("block 3")

    # 5. import letitloop over a bare interpreter
    imp: list[float] = []
    api: list[float] = []
    timed_run([py, "-c", "import letitloop"], env, scratch)
    for _ in range(plan.imports):
        bare.append(timed_run([py, "-c", "pass"], env, scratch)[0])
        imp.append(timed_run([py, "-c", "import letitloop"], env, scratch)[0])
        api.append(timed_run([py, "-c", "from letitloop import durable, step"], env, scratch)[0])

    # 6. journal bytes against payload bytes
    size_journal = scratch / "size" / "journal.duckdb"
    journals.append(size_journal)
    payload_bytes = write_payload(size_journal, plan.size_small, plan.size_big)
    stop_owner_hard(size_journal)
    from letitloop.journal._config import JournalPaths

    paths = JournalPaths(size_journal)
    wal = size_journal.with_name(size_journal.name + ".wal")
    sizes = {
        "payload": payload_bytes,
        "db": dir_bytes(size_journal),
        "wal": dir_bytes(wal),
        "log_dir": dir_bytes(paths.log_dir),
        "log_segments": sorted(p.name for p in paths.log_dir.glob("*")),
    }
    sizes["total"] = sizes["db"] + sizes["wal"] + sizes["log_dir"]

    # 7. four writer processes, each its own run, all started together
    owner = open_journal(journal)  # the owner stopped by the cold resumes: start it again
    writer_runs = []
    all_lat: list[float] = []
    for r in range(plan.writer_reps):
        t0 = time.time() + 2.0
        t1 = t0 + plan.writer_secs
        procs = []
        for w in range(4):
            cmd = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                "writer",
                str(journal),
                f"writer-{r}-{w}-{uuid.uuid4().hex[:6]}",
                repr(t0),
                repr(t1),
            ]
            proc = subprocess.Popen(cmd, env=env, cwd=scratch, stdout=subprocess.PIPE, text=True)
            children.append(proc)
            procs.append(proc)
        before = owner.stats()  # also folds what is pending, so the burst starts clean
        outs = []
        for proc in procs:
            stdout, _ = proc.communicate(timeout=plan.writer_secs + 60)
            if proc.returncode != 0:
                raise RuntimeError(f"writer failed with code {proc.returncode}")
            outs.append(json.loads(stdout))
        t = time.perf_counter()
        after = owner.stats()  # a read waits until the owner folded every acked record
        drain = (time.perf_counter() - t) * 1e3
        window = max(o["end"] for o in outs) - min(o["start"] for o in outs)
        steps = sum(o["steps"] for o in outs)
        fsyncs = after["fsyncs"] - before["fsyncs"]
        records = after["acked"] - before["acked"]
        all_lat += [x for o in outs for x in o["lat"]]
        writer_runs.append(
            {
                "steps": steps,
                "window_s": round(window, 3),
                "steps_per_s": steps / window,
                "per_writer": [o["steps"] for o in outs],
                "records": records,
                "fdatasyncs": fsyncs,
                "records_per_fdatasync": records / max(fsyncs, 1),
                "first_read_after_ms": drain,
            }
        )
        print(f"[writers] rep {r}: {steps / window:,.0f} steps/s", flush=True)
    floor_block("block 4")

    # 8. the LangGraph saver and lil-tui, from their own scripts
    lg = None if skip_langgraph else langgraph_figures(scratch, env, rep.quick)
    tui = None if skip_tui else tui_figures(env, rep.quick)

    data["meta"]["loadavg_end"] = os.getloadavg()

    # -- the report ----------------------------------------------------------------------------
    floor_all = [x for block in floors for x in block]
    fl = statistics.median(floor_all)
    rep.floor_ms = fl
    data["floor"] = summary(floor_all) | {"block_medians": [statistics.median(b) for b in floors]}
    print("\nresults", flush=True)
    rep.add(Row("fsync floor: append 200 B + fdatasync", fl, p90=pct(floor_all, 0.9), ratio=1.0))
    data["floor_100KB"] = summary(floor_big)
    big_fl = statistics.median(floor_big)
    rep.add(
        Row("append 100 KB + fdatasync (info)", big_fl, p90=pct(floor_big, 0.9), ratio=big_fl / fl)
    )
    data["duckdb_commit"] = summary(duck)
    rep.add(
        Row(
            "DuckDB BEGIN/INSERT 200 B/COMMIT, held connection",
            statistics.median(duck),
            p90=pct(duck, 0.9),
            ratio=statistics.median(duck) / fl,
        )
    )
    data["acked_append"] = summary(acks)
    rep.add(
        Row(
            "one acked journal append, sequential (info)",
            statistics.median(acks),
            p90=pct(acks, 0.9),
            ratio=statistics.median(acks) / fl,
        )
    )
    data["steps"] = {}
    overhead: dict[tuple[int, str], float] = {}
    for n, kind in configs:
        per = [(lil - plain) / n for lil, plain in samples[(n, kind)]]
        med = statistics.median(per)
        overhead[(n, kind)] = med
        data["steps"][f"{n}x{kind}"] = summary(per) | {
            "wall_ms": [lil for lil, _ in samples[(n, kind)]],
            "plain_ms": [plain for _, plain in samples[(n, kind)]],
            "ratio_to_floor": med / fl,
        }
        small = kind == "small"
        big = BARS["per_step_100KB"]
        rep.add(
            Row(
                f"per-step overhead, N={n}, {'20 B' if small else '100 KB'} outputs",
                med,
                p90=pct(per, 0.9),
                ratio=med / fl,
                bar=f"<= {BARS['per_step']:g}x floor"
                if small
                else f"{med / big_fl:.1f}x 100 KB fsync, <= {big:g}x",
                ok=(med / fl <= BARS["per_step"]) if small else med / big_fl <= big,
            )
        )
    scaling = overhead[(1000, "small")] / overhead[(10, "small")]
    data["steps"]["n1000_over_n10"] = scaling
    rep.add(
        Row(
            "per-step overhead N=1000 / N=10",
            scaling,
            unit="x",
            bar=f"{1 - BARS['scaling']:g} .. {1 + BARS['scaling']:g}",
            ok=abs(scaling - 1) <= BARS["scaling"],
        )
    )
    bare_med = statistics.median(bare)
    data["resume"] = {
        "in_process": summary(resume_in),
        "fresh_process": summary(resume_fresh),
        "fresh_process_owner_start": summary(resume_cold),
        "fresh_over_bare_ms": statistics.median(resume_fresh) - bare_med,
        "cold_over_bare_ms": statistics.median(resume_cold) - bare_med,
    }
    med = statistics.median(resume_in)
    key = "resume_in_process_ms"
    rep.add(
        Row(
            "resume 1000 steps, in process",
            med,
            p90=pct(resume_in, 0.9),
            ratio=med / fl,
            bar=f"<= {BARS[key]:g} ms",
            ok=med <= BARS[key],
        )
    )
    rep.add(Row("python -c pass (bare interpreter)", bare_med, p90=pct(bare, 0.9)))
    for label, xs, key in (
        ("resume 1000 steps, fresh process, over bare", resume_fresh, "resume_fresh_over_bare_ms"),
        (
            "resume 1000 steps, fresh process, owner not running (cold start), over bare",
            resume_cold,
            "resume_cold_over_bare_ms",
        ),
    ):
        med = statistics.median(xs) - bare_med
        bar = f"<= {BARS[key]:g} ms"
        rep.add(Row(label, med, ratio=med / fl, bar=bar, ok=med <= BARS[key]))
    over = statistics.median(imp) - bare_med
    over_api = statistics.median(api) - bare_med
    data["import"] = {
        "bare": summary(bare),
        "import_letitloop": summary(imp),
        "from_letitloop_import_durable_step": summary(api),
        "import_over_bare_ms": over,
        "api_over_bare_ms": over_api,
    }
    rep.add(
        Row(
            "from letitloop import durable, step, over bare",
            over_api,
            ratio=over_api / fl,
            bar=f"<= {BARS['import_api_ms']:g} ms",
            ok=over_api <= BARS["import_api_ms"],
        )
    )
    rep.add(Row("import letitloop, over bare (info)", over, ratio=over / fl))
    size_ratio = sizes["total"] / sizes["payload"]
    data["journal_size"] = sizes | {"ratio": size_ratio}
    rep.add(Row("payload written (info)", sizes["payload"] / 1e6, unit="MB"))
    for label, key in (
        ("journal file, owner stopped (info)", "db"),
        ("journal .wal file (info)", "wal"),
        ("journal log directory (info)", "log_dir"),
    ):
        rep.add(Row(label, sizes[key] / 1e6, unit="MB"))
    rep.add(
        Row(
            "journal bytes / payload bytes",
            size_ratio,
            unit="x",
            bar=f"<= {BARS['journal_size']:g}",
            ok=size_ratio <= BARS["journal_size"],
        )
    )
    rates = [w["steps_per_s"] for w in writer_runs]
    data["writers"] = {"runs": writer_runs, "step_latency_ms": summary(all_lat)}
    med_rate = statistics.median(rates)
    rep.add(
        Row(
            "4 writer processes, total durable steps/s",
            med_rate,
            unit="/s",
            bar=f">= {BARS['writers_steps_per_s']:,.0f} /s",
            ok=med_rate >= BARS["writers_steps_per_s"],
        )
    )
    per_sync = statistics.median(w["records_per_fdatasync"] for w in writer_runs)
    rep.add(
        Row(
            "4 writers: records (started + completed) per fdatasync (info)",
            per_sync,
            unit="records",
        )
    )
    drain = statistics.median(w["first_read_after_ms"] for w in writer_runs)
    rep.add(
        Row(
            "4 writers: first read after the burst waited",
            drain,
            ratio=drain / fl,
            bar=f"<= {BARS['first_read_after_burst_ms']:g} ms",
            ok=drain <= BARS["first_read_after_burst_ms"],
        )
    )
    rep.add(
        Row(
            "4 writers: latency of one step (info)",
            statistics.median(all_lat),
            p90=pct(all_lat, 0.9),
            ratio=statistics.median(all_lat) / fl,
        )
    )
    report_langgraph(rep, lg)
    report_tui(rep, tui)
    data["bars"] = [
        {"measurement": r.label, "value": r.median, "unit": r.unit, "bar": r.bar, "ok": r.ok}
        for r in rep.rows
        if r.ok is not None
    ]


def langgraph_figures(scratch: Path, env: dict[str, str], quick: bool) -> dict[str, Any]:
    """benchmarks/langgraph.py --json: the saver per node against SqliteSaver, and the latest
    checkpoint read, in a subprocess (that script keeps its own folder off sys.path)."""
    out = scratch / "langgraph.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "langgraph.py"), "--json", str(out)]
    cmd += ["--dir", str(scratch / "lg")] + (["--quick"] if quick else [])
    print("[langgraph] benchmarks/langgraph.py", flush=True)
    timed_run(cmd, env, scratch)
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def tui_figures(env: dict[str, str], quick: bool) -> dict[str, Any]:
    """benchmarks/tui.py --json on 10,000 runs / 1M events; the journal is built once and kept
    in TUI_CACHE (with its own key directory) for the next run."""
    TUI_CACHE.mkdir(parents=True, exist_ok=True)
    out = TUI_CACHE / "last.json"
    journal = TUI_CACHE / "journal.duckdb"
    tui_env = env | {"LIL_KEY_DIR": str(TUI_CACHE / "keys")}
    cmd = [sys.executable, str(REPO / "benchmarks" / "tui.py"), "--journal", str(journal)]
    cmd += ["--json", str(out)] + (["--opens", "2", "--samples", "3"] if quick else [])
    print(f"[tui] benchmarks/tui.py on {journal} (built on first use: minutes)", flush=True)
    try:
        timed_run(cmd, tui_env, REPO)
    finally:
        from letitloop.journal.duckdb._client import stop_owner

        saved = os.environ.get("LIL_KEY_DIR")
        os.environ["LIL_KEY_DIR"] = tui_env["LIL_KEY_DIR"]
        with contextlib.suppress(Exception):
            stop_owner(journal)
        if saved is not None:
            os.environ["LIL_KEY_DIR"] = saved
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def report_langgraph(rep: Report, lg: dict[str, Any] | None) -> None:
    if lg is None:
        rep.data["langgraph"] = "skipped (--skip-langgraph)"
        return
    rep.data["langgraph"] = lg
    bar = BARS["langgraph_ratio"]
    for durability in ("sync", "async"):
        per = lg["per_node"][durability]
        rep.add(
            Row(
                f"LangGraph saver per node / SqliteSaver's, durability={durability}",
                per["ratio"],
                unit="x",
                bar=f"<= {bar:g}x",
                ok=per["ratio"] <= bar,
            )
        )
        rep.add(
            Row(
                f"  ours per node, {durability} (info; SqliteSaver {per['sqlite_ms']:.3f} ms)",
                per["letitloop_ms"],
            )
        )
    latest = lg["latest_read_ms"]["letitloop"]
    rep.add(
        Row(
            "LangGraph saver: latest checkpoint read (get_tuple)",
            latest,
            bar=f"<= {BARS['langgraph_latest_read_ms']:g} ms",
            ok=latest <= BARS["langgraph_latest_read_ms"],
        )
    )


def report_tui(rep: Report, tui: dict[str, Any] | None) -> None:
    if tui is None:
        rep.data["tui"] = "skipped (--skip-tui)"
        return
    rep.data["tui"] = tui
    rep.add(
        Row(
            f"lil-tui open on {tui['runs']:,} runs / {tui['runs'] * tui['events_per_run']:,} "
            "events, first rows on screen",
            tui["open_ms"],
            bar=f"<= {BARS['tui_open_ms']:g} ms",
            ok=tui["open_ms"] <= BARS["tui_open_ms"],
        )
    )


def write_payload(journal: Path, n_small: int, n_big: int) -> int:
    """Two runs of distinct random-ish text outputs: n_small x 1 KB and n_big x 100 KB."""
    from letitloop import durable, step

    def text(nbytes: int) -> str:
        return base64.b64encode(os.urandom(nbytes * 3 // 4 + 3)).decode("ascii")[:nbytes]

    written = 0

    def produce(nbytes: int, i: int) -> str:
        nonlocal written
        out = text(nbytes)
        written += len(out)
        return out

    for nbytes, count in ((1024, n_small), (100 * 1024, n_big)):

        @durable(journal=str(journal), run_id=f"size-{nbytes}", name="bench.size")
        def wf(nbytes: int = nbytes, count: int = count) -> int:
            for i in range(count):
                step(f"s{i}", produce, nbytes, i)
            return count

        wf()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (< 60 s)")
    parser.add_argument("--json", metavar="OUT", help="write every number to this JSON file")
    parser.add_argument(
        "--dir", help="where the scratch directory goes (default <repo>/.bench; same disk!)"
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait up to this long for the CPUs to be >= 90%% idle (a shared machine)",
    )
    parser.add_argument(
        "--skip-tui",
        action="store_true",
        help=f"leave out lil-tui on 10k runs (its journal is built once, then reused: {TUI_CACHE})",
    )
    parser.add_argument(
        "--skip-langgraph", action="store_true", help="leave out the LangGraph saver figures"
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        role, *rest = args.worker
        assert role == "writer", role
        writer_main(rest[0], rest[1], float(rest[2]), float(rest[3]))
        return 0
    rep = run(args)
    fl = rep.floor_ms
    print(
        f"\nletitloop journal benchmark, {rep.data['meta']['date']}, "
        f"commit {rep.data['meta']['commit']}, "
        f"{'quick' if rep.quick else 'full'} run in {rep.data['meta']['duration_s']} s; "
        f"fsync floor {fl:.3f} ms (block medians "
        + ", ".join(f"{x:.3f}" for x in rep.data["floor"]["block_medians"])
        + ")\n"
    )
    print(rep.table())
    meta = rep.data["meta"]
    share = meta.get("other_processes_cpu_share")
    if share is not None:
        print(f"\nother processes used {share:.0%} of the {os.cpu_count()} CPUs during the run")
        if share > 0.1:
            print(
                "note: the machine was shared, so these figures are pessimistic; run it again "
                "on a quiet machine (--wait-quiet waits for one)"
            )
    missed = [r.label for r in rep.rows if r.ok is False]
    print(f"\n{len(missed)} bar(s) missed" + (": " + "; ".join(missed) if missed else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(rep.data, indent=2) + "\n")
        print(f"numbers written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
