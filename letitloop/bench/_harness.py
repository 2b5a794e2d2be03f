"""The whole benchmark: every framework on every scenario, a clean run then faulted trials.

For each framework: find its interpreter (or drop it, saying why), give it a fresh store, then
for each scenario run it once without faults (the clean run: its request count, calls, tokens,
effects and answer are the yardstick), then trials of ``faults_per_trial`` faults each until
``kills`` faults have landed. Shared for the whole run: one counter server, one PostgreSQL
cluster (when a framework needs it), one memory cgroup (for OOM kills), one Prefect API server.
Everything is made in one scratch directory and removed at the end, processes included.
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from letitloop.bench import _frameworks as fws
from letitloop.bench._faults import KINDS, WEIGHTS, MemoryCgroup, draw
from letitloop.bench._judge import judge_trial, summarize_clean
from letitloop.bench._options import BenchOptions
from letitloop.bench._postgres import Cluster, PgUnavailable
from letitloop.bench._prefect import PrefectServer
from letitloop.bench._scenario import Scenario
from letitloop.bench._server import CounterServer
from letitloop.bench._summary import totals
from letitloop.bench._trial import Launch, Trial

WORKERS = Path(__file__).resolve().parent / "workers"
Say = Callable[[str], None]


@dataclass
class Shared:
    """What every framework's trials share in one benchmark run."""

    opts: BenchOptions
    scratch: Path
    server: CounterServer
    env: dict[str, str]
    say: Say
    oom: bool = False  # memory cgroups can be made here (one per lane)
    pg: Cluster | None = None
    pg_why: str = ""
    prefect: PrefectServer | None = None


def base_env(scratch: Path) -> dict[str, str]:
    """The workers' environment: ours, with letitloop (this tree) alone on the path."""
    path_dir = scratch / "path"
    path_dir.mkdir()
    (path_dir / "letitloop").symlink_to(fws.source_root() / "letitloop")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LIL_JOURNAL")}
    return env | {
        "PYTHONPATH": str(path_dir),
        "PYTHONUNBUFFERED": "1",
        "LIL_KEY_DIR": str(scratch / "keys"),
        "LIL_OWNER_IDLE": "3600",
        "DO_NOT_TRACK": "1",
        "CREWAI_DISABLE_TELEMETRY": "true",
        "CREWAI_TRACING_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "ANONYMIZED_TELEMETRY": "false",
        "HF_HUB_OFFLINE": "1",
        "PREFECT_HOME": str(scratch / "prefect-home"),
        "PREFECT_LOCAL_STORAGE_PATH": str(scratch / "prefect-home" / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "ERROR",
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "true",
    }


def store_for(shared: Shared, fw: fws.Framework, python: str) -> dict[str, Any]:
    """A fresh store of the framework's kind (a journal, a database, a folder)."""
    folder = shared.scratch / f"store-{fw.id}"
    folder.mkdir()
    if fw.store == "postgres":
        assert shared.pg is not None
        dsn = shared.pg.database(fw.id.replace("-", "_"))
        return {"dsn": dsn, "journal": dsn}
    if fw.store == "duckdb":
        journal = str(folder / "journal.duckdb")
        # the owner starts here, outside the workers' cgroup and sessions
        code = (
            "import sys; from letitloop import open_journal; open_journal(sys.argv[1]).list_runs()"
        )
        subprocess.run(
            [sys.executable, "-c", code, journal],
            env=shared.env,
            check=True,
            timeout=120,
            capture_output=True,
        )
        return {"journal": journal, "folder": str(folder)}
    if fw.store == "sqlite":
        return {"sqlite": str(folder / "store.sqlite"), "folder": str(folder)}
    return {"folder": str(folder)}


def fault_kinds(shared: Shared, fw: fws.Framework, sc: Scenario) -> list[str]:
    kinds = ["sigkill", "sigterm"]
    if sc.effects:
        kinds.append("effect")
    if shared.oom:
        kinds.append("oom")
    if fw.uses_postgres and shared.pg is not None and shared.pg.managed:
        kinds.append("pg-restart")
    return [k for k in KINDS if k in kinds and k in shared.opts.fault_kinds]


def run_scenario(
    shared: Shared,
    fw: fws.Framework,
    python: str,
    store: dict[str, Any],
    sc: Scenario,
    cgroup: MemoryCgroup | None,
) -> dict[str, Any]:
    """The clean run and the faulted trials of one scenario on one framework."""
    opts, say = shared.opts, shared.say
    rng = random.Random(f"{opts.seed}:{fw.id}:{sc.name}")
    lil_env = {"LIL_JOURNAL": str(store.get("journal") or store.get("dsn") or "")}
    stderr = shared.scratch / f"{fw.id}-{sc.name}.log"

    def launch(run_id: str) -> Launch:
        spec = {
            "server": shared.server.url,
            "run": run_id,
            "scenario": sc.to_json(),
            "framework": fw.id,
            "store": store,
            "planted": fw.planted,
            "prefect_api": shared.prefect.api_url if shared.prefect else None,
        }
        path = shared.scratch / "specs" / f"{run_id}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(fws_json(spec))
        argv = [python, str(WORKERS / fw.worker), str(path)]
        return Launch(argv, shared.env, shared.scratch, stderr, lil_env)

    def trial(run_id: str, faults: list[Any], clean: dict[str, Any]) -> tuple[Any, Any]:
        log = shared.server.open_run(run_id, sc.name, sc.latency_ms, sc.reply_words, sc.decide_ms)
        pg_restart = shared.pg.restart if shared.pg is not None and shared.pg.managed else None
        runner = Trial(
            shared.server,
            log,
            run_id,
            launch(run_id),
            clean,
            cgroup,
            pg_restart,
            opts.trial_timeout_s,
        )
        return runner.run(faults), log

    started = time.monotonic()
    result, log = trial(f"{fw.id}-{sc.name}-clean", [], {})
    events = log.snapshot()
    if not result.finished or log.answer is None:
        why = "; ".join(result.errors)[-600:] or "no answer"
        return {"skipped": f"the clean run did not finish: {why}"}
    clean = summarize_clean(events, log.answer)
    clean["wall_s"] = round(result.wall_s, 2)
    clean["person"] = result.person
    trials: list[dict[str, Any]] = []
    kinds = fault_kinds(shared, fw, sc)
    landed, n = 0, 0
    while landed < opts.kills and n < opts.kills * 2 + 2:
        count = min(opts.faults_per_trial, opts.kills - landed)
        faults = draw(rng, kinds, count, sc.latency_ms, WEIGHTS)
        run_id = f"{fw.id}-{sc.name}-{n}"
        result, log = trial(run_id, faults, clean)
        judged = judge_trial(result, log.snapshot(), log.answer, log.answered_at, clean, sc.plan)
        trials.append(judged)
        landed += len(judged["faults"])
        n += 1
        for f in judged["faults"]:
            say(
                f"  {fw.id} {sc.name} #{n - 1}: {f['where']}: lost {f['lost']}, "
                f"again {f['rerun_calls']} calls, dup {f['duplicate_effects']}"
                + (f", person: {'; '.join(f['person'])}" if f["person"] else "")
            )
    out: dict[str, Any] = {"clean": clean, "kinds": kinds, "trials": trials}
    out["totals"] = totals(out)
    out["wall_s"] = round(time.monotonic() - started, 1)
    return out


def fws_json(data: Any) -> str:
    import json

    return json.dumps(data, indent=1)


def run_framework(
    shared: Shared, fw: fws.Framework, scenarios: list[Scenario], cgroup: MemoryCgroup | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "title": fw.title,
        "store": fw.store,
        "resume": fw.resume,
        "effects": fw.effects,
        "approval": fw.approval,
        "planted": fw.planted or None,
    }
    python, where = fws.python_for(fw)
    if python is None:
        entry["skipped"] = where
        return entry
    if fw.uses_postgres and shared.pg is None:
        entry["skipped"] = f"no PostgreSQL: {shared.pg_why}"
        return entry
    if fw.id == "prefect" and (shared.prefect is None or not shared.prefect.api_url):
        why = shared.prefect.why if shared.prefect else "not started"
        entry["skipped"] = f"its API server did not start: {why}"
        return entry
    entry["interpreter"] = where
    entry["versions"] = fws.versions(python, fw.packages)
    store = store_for(shared, fw, python)
    entry["scenarios"] = {}
    for sc in scenarios:
        shared.say(f"[{fw.id}] {sc.name}")
        try:
            entry["scenarios"][sc.name] = run_scenario(shared, fw, python, store, sc, cgroup)
        except (OSError, subprocess.SubprocessError, PgUnavailable) as exc:
            entry["scenarios"][sc.name] = {"skipped": f"{type(exc).__name__}: {exc}"[:600]}
        if "skipped" in entry["scenarios"][sc.name]:
            shared.say(f"[{fw.id}] {sc.name}: {entry['scenarios'][sc.name]['skipped']}")
    if fw.store == "duckdb" and store.get("journal"):
        subprocess.run(
            [sys.executable, "-m", "letitloop", "journal", "stop", "--journal", store["journal"]],
            env=shared.env,
            capture_output=True,
            timeout=120,
            check=False,
        )
    return entry


# minutes each framework took in the full run of 2026-12-07 (docs/bench.md), to balance lanes
COST = {
    "letitloop": 3,
    "letitloop-pg": 4,
    "langgraph": 7,
    "langgraph-pg": 7,
    "dbos": 8,
    "dbos-pg": 8,
    "prefect": 10,
    "smolagents": 4,
    "smolagents-lil": 6,
    "crewai": 19,
    "crewai-lil": 26,
    "autogen": 5,
    "autogen-lil": 4,
    "letitloop-lossy": 3,
}


def lanes_of(selected: list[fws.Framework], jobs: int) -> list[list[fws.Framework]]:
    """Frameworks split into ``jobs`` lanes run side by side: every PostgreSQL one in the first
    (a restart of the one server must not hit a run that did not ask for it), the others
    longest first into the lightest lane."""
    lanes: list[list[fws.Framework]] = [[] for _ in range(max(1, jobs))]
    weight = [0] * len(lanes)
    for fw in selected:
        if fw.uses_postgres:
            lanes[0].append(fw)
            weight[0] += COST.get(fw.id, 1)
    rest = sorted((f for f in selected if not f.uses_postgres), key=lambda f: -COST.get(f.id, 1))
    for fw in rest:
        i = weight.index(min(weight))
        lanes[i].append(fw)
        weight[i] += COST.get(fw.id, 1)
    return [lane for lane in lanes if lane]


def run_lanes(
    shared: Shared, selected: list[fws.Framework], scenarios: list[Scenario]
) -> dict[str, Any]:
    """Every framework, in lanes (threads) of their own, each lane with its own memory cgroup;
    the results in the order asked."""
    from concurrent.futures import ThreadPoolExecutor

    results: dict[str, Any] = {}

    def lane(index: int, frameworks: list[fws.Framework]) -> None:
        cgroup = MemoryCgroup.make(f"lil-bench-{os.getpid()}-{index}") if shared.oom else None
        try:
            for fw in frameworks:
                results[fw.id] = run_framework(shared, fw, scenarios, cgroup)
                if "skipped" in results[fw.id]:
                    shared.say(f"[{fw.id}] drops out: {results[fw.id]['skipped']}")
        finally:
            if cgroup is not None:
                cgroup.remove()

    lanes = lanes_of(selected, shared.opts.jobs)
    with ThreadPoolExecutor(len(lanes)) as pool:
        for future in [pool.submit(lane, i, fws_) for i, fws_ in enumerate(lanes)]:
            future.result()
    return {fw.id: results[fw.id] for fw in selected}


def run(opts: BenchOptions, scenarios: list[Scenario], say: Say) -> dict[str, Any]:
    """Run the benchmark; every figure, as JSON-ready data."""
    selected = [fws.BY_ID[f] for f in opts.frameworks]
    started = time.monotonic()
    facts = meta(opts, scenarios)  # the code and the machine as the run starts
    scratch = Path(tempfile.mkdtemp(prefix="lil-bench-", dir=opts.scratch_dir))
    server = CounterServer().start()
    shared = Shared(opts, scratch, server, base_env(scratch), say)
    skipped_faults: dict[str, str] = {}
    try:
        if "oom" in opts.fault_kinds:
            probe = MemoryCgroup.make(f"lil-bench-{os.getpid()}-probe")
            shared.oom = probe is not None
            if probe is None:
                skipped_faults["oom"] = MemoryCgroup.why
            else:
                probe.remove()
        if any(f.uses_postgres for f in selected):
            try:
                if opts.pg_url:
                    shared.pg = Cluster(opts.pg_url)
                    skipped_faults["pg-restart"] = "an external server (--pg): not restarted"
                else:
                    base = Path(tempfile.mkdtemp(prefix="lil-bench-pg-"))
                    shared.pg = Cluster.start(base)
            except (PgUnavailable, OSError, subprocess.SubprocessError) as exc:
                shared.pg_why = str(exc)
                skipped_faults["pg-restart"] = f"no PostgreSQL: {exc}"
        if any(f.id == "prefect" for f in selected):
            python, _ = fws.python_for(fws.BY_ID["prefect"])
            if python is not None:
                say("[prefect] starting its API server")
                shared.prefect = PrefectServer.start(python, shared.env, scratch)
                if shared.prefect.api_url:
                    shared.env["PREFECT_API_URL"] = shared.prefect.api_url
        results = run_lanes(shared, selected, scenarios)
    finally:
        server.stop()
        if shared.prefect is not None:
            shared.prefect.stop()
        if shared.pg is not None:
            shared.pg.close()
        if not opts.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    facts["wall_s"] = round(time.monotonic() - started, 1)
    facts["load_end"] = list(os.getloadavg())
    return {
        "meta": facts,
        "skipped_faults": skipped_faults,
        "frameworks": results,
    }


def meta(opts: BenchOptions, scenarios: list[Scenario]) -> dict[str, Any]:
    import datetime as dt

    from letitloop._version import __version__

    commit = ""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=fws.source_root(),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "letitloop": __version__,
        "commit": commit or "unknown",
        "seed": opts.seed,
        "quick": opts.quick,
        "kills": opts.kills,
        "faults_per_trial": opts.faults_per_trial,
        "jobs": opts.jobs,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.release()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs",
        "load": list(os.getloadavg()),
        "scenarios": {s.name: {"title": s.title, "source": s.source} for s in scenarios},
    }
