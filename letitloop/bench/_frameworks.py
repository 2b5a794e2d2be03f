"""The frameworks under test: how each stores its progress, resumes, and where it is installed.

Each runs in its own interpreter (their pins clash with each other and with letitloop's):
``.venvs/peers-NAME`` built from ``benchmarks/peers/NAME.txt`` and the adapter environments
``.venvs/NAME`` from ``tests/adapters/envs/NAME.txt`` (``make bench-durability`` builds them),
or ``$LIL_BENCH_ENVS/NAME`` anywhere else. letitloop itself, and LangGraph when this interpreter
has it, run here. One that is not installed, or whose store cannot be had (no PostgreSQL),
drops out with the reason in the output.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path


@dataclass(frozen=True)
class Framework:
    """One framework on one store, and what the output says about it."""

    id: str
    title: str
    worker: str  # the script in letitloop/bench/workers/
    env: str  # "" for this interpreter, else the environment's name
    store: str  # duckdb | postgres | sqlite | files
    modules: tuple[str, ...]  # what its interpreter must import
    packages: tuple[str, ...]  # whose versions the output names
    resume: str  # how the harness restarts it, as the framework's docs say
    effects: str  # how a side effect is fenced, if at all
    approval: str  # how the person's decision reaches the run
    planted: str = ""  # the planted bug this variant carries

    @property
    def uses_postgres(self) -> bool:
        return self.store == "postgres"


_LIL = ("letitloop", "duckdb", "msgpack")
_LG = ("langgraph", "langgraph-checkpoint")
_DBOS = Framework(
    "dbos",
    "DBOS (SQLite)",
    "dbos_worker.py",
    "peers-dbos",
    "sqlite",
    ("dbos",),
    ("dbos",),
    "DBOS.launch() recovers the pending workflow",
    "none (a step)",
    "a step that waits for the decision",
)
FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        "letitloop",
        "letitloop (DuckDB)",
        "lil_worker.py",
        "",
        "duckdb",
        ("letitloop",),
        _LIL,
        "call the workflow again (same run id)",
        "atomic_marker",
        "approval(wait=False)",
    ),
    Framework(
        "letitloop-pg",
        "letitloop (PostgreSQL)",
        "lil_worker.py",
        "",
        "postgres",
        ("letitloop", "psycopg"),
        (*_LIL, "psycopg"),
        "call the workflow again (same run id)",
        "atomic_marker",
        "approval(wait=False)",
    ),
    Framework(
        "langgraph",
        "LangGraph + SqliteSaver",
        "langgraph_worker.py",
        "peers-langgraph",
        "sqlite",
        ("langgraph.checkpoint.sqlite",),
        (*_LG, "langgraph-checkpoint-sqlite"),
        "invoke(None) on the thread id",
        "none (a node)",
        "a node that waits for the decision",
    ),
    Framework(
        "langgraph-pg",
        "LangGraph + PostgresSaver",
        "langgraph_worker.py",
        "peers-langgraph",
        "postgres",
        ("langgraph.checkpoint.postgres",),
        (*_LG, "langgraph-checkpoint-postgres"),
        "invoke(None) on the thread id",
        "none (a node)",
        "a node that waits for the decision",
    ),
    _DBOS,
    replace(_DBOS, id="dbos-pg", title="DBOS (PostgreSQL)", store="postgres"),
    Framework(
        "prefect",
        "Prefect 3 (persisted results)",
        "prefect_worker.py",
        "peers-prefect",
        "files",
        ("prefect",),
        ("prefect",),
        "call the flow again: tasks hit their cached results",
        "none (a task)",
        "a task that waits for the decision",
    ),
    Framework(
        "smolagents",
        "smolagents",
        "smol_worker.py",
        "smolagents",
        "none",
        ("smolagents",),
        ("smolagents",),
        "run the agent again (nothing of its own to resume)",
        "none",
        "a tool that waits for the decision",
    ),
    Framework(
        "smolagents-lil",
        "smolagents + letitloop",
        "smol_worker.py",
        "smolagents",
        "duckdb",
        ("smolagents", "letitloop"),
        ("smolagents",),
        "durable_agent: run again (same run id)",
        "atomic_marker",
        "a tool that waits for the decision (journaled)",
    ),
    Framework(
        "crewai",
        "CrewAI",
        "crew_worker.py",
        "crewai",
        "none",
        ("crewai",),
        ("crewai",),
        "kickoff again (nothing of its own to resume)",
        "none",
        "a tool that waits for the decision",
    ),
    Framework(
        "crewai-lil",
        "CrewAI + letitloop",
        "crew_worker.py",
        "crewai",
        "duckdb",
        ("crewai", "letitloop"),
        ("crewai",),
        "durable_crew: kickoff again (same run id)",
        "atomic_marker",
        "a tool that waits for the decision (journaled)",
    ),
    Framework(
        "autogen",
        "AutoGen",
        "autogen_worker.py",
        "autogen",
        "none",
        ("autogen_agentchat",),
        ("autogen-agentchat",),
        "run the team again (nothing of its own to resume)",
        "none",
        "a tool that waits for the decision",
    ),
    Framework(
        "autogen-lil",
        "AutoGen + letitloop",
        "autogen_worker.py",
        "autogen",
        "duckdb",
        ("autogen_agentchat", "letitloop"),
        ("autogen-agentchat",),
        "durable_team: run again (same run id)",
        "atomic_marker",
        "a tool that waits for the decision (journaled)",
    ),
)
PLANTED = replace(  # letitloop on DuckDB but for the bug it carries
    FRAMEWORKS[0],
    id="letitloop-lossy",
    title="letitloop, planted bug: acks before writing",
    planted="lossy-journal",
)
BY_ID = {f.id: f for f in (*FRAMEWORKS, PLANTED)}


def source_root() -> Path:
    """The folder holding the letitloop package (a checkout, or site-packages)."""
    return Path(__file__).resolve().parents[2]


def env_dirs() -> list[Path]:
    """Where framework environments are looked for, in order."""
    dirs = []
    if os.environ.get("LIL_BENCH_ENVS"):
        dirs.append(Path(os.environ["LIL_BENCH_ENVS"]))
    dirs.append(source_root() / ".venvs")
    return dirs


def _has(python: str, modules: tuple[str, ...]) -> bool:
    if python == sys.executable:
        return all(_find(m) for m in modules)
    probe = (
        "import importlib.util as u, sys\n"
        "sys.exit(0 if all(u.find_spec(m) for m in sys.argv[1:]) else 1)"
    )
    done = subprocess.run([python, "-c", probe, *modules], capture_output=True, timeout=120)
    return done.returncode == 0


def _find(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):
        return False


def python_for(fw: Framework) -> tuple[str | None, str]:
    """The interpreter a framework runs in and where it comes from, or None and why not."""
    lil_modules = tuple(m for m in fw.modules if m == "letitloop")
    others = tuple(m for m in fw.modules if m != "letitloop")
    if not fw.env:
        return (
            (sys.executable, "this interpreter")
            if _has(sys.executable, others)
            else (
                None,
                f"not installed here: pip install {' '.join(fw.packages[-1:])}",
            )
        )
    for base in env_dirs():
        python = base / fw.env / "bin" / "python"
        if python.exists() and (base / fw.env / ".installed").exists():
            if _has(str(python), others):
                return str(python), f"{base.name}/{fw.env}"
            return None, f"{base / fw.env} lacks {', '.join(others)}: rebuild it"
    if fw.env == "peers-langgraph" and _has(sys.executable, others):
        return sys.executable, "this interpreter (no .venvs/peers-langgraph)"
    del lil_modules
    return None, f"not installed: `make bench-durability` builds .venvs/{fw.env}"


def versions(python: str, packages: tuple[str, ...]) -> dict[str, str]:
    """The installed versions of ``packages`` in ``python``'s environment."""
    code = (
        "import json,sys\nfrom importlib import metadata as m\nout={}\n"
        "for d in sys.argv[1:]:\n    try: out[d]=m.version(d)\n    except Exception: pass\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run(
        [python, "-c", code, *packages], capture_output=True, text=True, timeout=120
    )
    try:
        found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {}
    return found
