"""Totals: one scenario's trials summed, and one framework's scenarios summed.

Token figures are relative to the clean run of the same framework and scenario: *per kill* is a
fault's re-run tokens over one clean run's tokens; *per run* is a faulted run's tokens beyond a
clean run's, over the clean run's (what the crashes cost a run, all its faults together).
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any


def totals(scenario: dict[str, Any]) -> dict[str, Any]:
    """The figures of one framework on one scenario, from its judged trials."""
    clean, trials = scenario["clean"], scenario["trials"]
    faults = [f for t in trials for f in t["faults"]]
    tokens = max(1, clean["tokens"])
    recov = [f["recovery_ms"] for f in faults if f["recovery_ms"] is not None]
    person = [p for f in faults for p in f["person"]]
    extra_runs = [max(0, t["tokens"] - clean["tokens"]) for t in trials if t["finished"]]
    return {
        "kills": len(faults),
        "by_kind": dict(Counter(f["kind"] for f in faults)),
        "trials": len(trials),
        "lost": sum(f["lost"] for f in faults),
        "lost_tokens": sum(f["lost_tokens"] for f in faults),
        "rerun_calls": sum(f["rerun_calls"] for f in faults),
        "rerun_inflight": sum(f["rerun_inflight"] for f in faults),
        "max_rerun_per_kill": max((f["rerun_calls"] for f in faults), default=0),
        "rerun_tokens": sum(f["rerun_tokens"] for f in faults),
        "tokens_pct_per_kill": _mean([100 * f["rerun_tokens"] / tokens for f in faults]),
        "tokens_pct_per_run": _mean([100 * x / tokens for x in extra_runs]),
        "duplicate_effects": sum(t["duplicate_effects"] for t in trials),
        "recovery_ms_median": round(statistics.median(recov), 1) if recov else None,
        "recovery_ms_max": round(max(recov), 1) if recov else None,
        "person_acts": len(person),
        "person_commands": sorted(set(person)),
        "right": sum(1 for t in trials if t["right_answer"] and t["effects_right"]),
        "finished": sum(1 for t in trials if t["finished"]),
        "errors": [e for t in trials for e in t["errors"]][:20],
    }


def framework_totals(entry: dict[str, Any]) -> dict[str, Any] | None:
    """One framework's figures over every scenario it ran (None if it ran none)."""
    rows = [s["totals"] for s in entry.get("scenarios", {}).values() if "totals" in s]
    if not rows:
        return None
    faults = [
        f
        for s in entry["scenarios"].values()
        if "trials" in s
        for t in s["trials"]
        for f in t["faults"]
    ]
    recov = [f["recovery_ms"] for f in faults if f["recovery_ms"] is not None]
    return {
        "scenarios": len(rows),
        "kills": sum(r["kills"] for r in rows),
        "min_kills": min(r["kills"] for r in rows),
        "lost": sum(r["lost"] for r in rows),
        "rerun_calls": sum(r["rerun_calls"] for r in rows),
        "max_rerun_per_kill": max(r["max_rerun_per_kill"] for r in rows),
        "tokens_pct_per_kill": _mean([r["tokens_pct_per_kill"] for r in rows]),
        "tokens_pct_per_run": _mean([r["tokens_pct_per_run"] for r in rows]),
        "duplicate_effects": sum(r["duplicate_effects"] for r in rows),
        "recovery_ms_median": round(statistics.median(recov), 1) if recov else None,
        "person_acts": sum(r["person_acts"] for r in rows),
        "person_commands": sorted({c for r in rows for c in r["person_commands"]}),
        "right": sum(r["right"] for r in rows),
        "trials": sum(r["trials"] for r in rows),
    }


def _mean(xs: list[float]) -> float:
    return round(statistics.fmean(xs), 2) if xs else 0.0
