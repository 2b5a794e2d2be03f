"""``lil bench``'s options, declared once."""

from __future__ import annotations

from dataclasses import dataclass

from letitloop.bench._faults import KINDS

DEFAULT_SEED = 20261207
FULL_KILLS = 20  # faults landed per framework and scenario in a full run
QUICK_KILLS = 3


@dataclass(frozen=True)
class BenchOptions:
    """How a benchmark run goes.

    Attributes:
        frameworks: the ids to run, in order (``lil bench --list`` shows them).
        kills: faults that must land per framework and scenario.
        faults_per_trial: faults injected into one run before it may finish.
        seed: every fault's kind and point is drawn from it (per framework and scenario).
        quick: a smoke run (fewer kills); recorded in the output.
        fault_kinds: the kinds of fault that may be drawn.
        pg_url: an existing PostgreSQL server (its role may CREATE DATABASE) instead of a
            throwaway cluster; then PostgreSQL is not restarted.
        trial_timeout_s: a trial (one run with its faults) is abandoned after this long.
        scratch_dir: where the scratch directory is made (default: the system's temp dir).
        keep: keep the scratch directory (journals, logs, worker specs) to look into.
        jobs: frameworks run side by side (each in its own lane: its own processes, memory
            cgroup and store; every PostgreSQL one in one lane, as the server is restarted).
    """

    frameworks: tuple[str, ...]
    kills: int = FULL_KILLS
    faults_per_trial: int = 4
    seed: int = DEFAULT_SEED
    quick: bool = False
    fault_kinds: tuple[str, ...] = KINDS
    pg_url: str | None = None
    trial_timeout_s: float = 300.0
    scratch_dir: str | None = None
    keep: bool = False
    jobs: int = 2
