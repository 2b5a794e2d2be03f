"""Per-node overhead of the letitloop LangGraph checkpointer vs LangGraph's SqliteSaver.

    .venv/bin/python benchmarks/langgraph.py            # about 15 s on the 2-core dev VM
    .venv/bin/python benchmarks/langgraph.py --quick    # smoke test

One linear graph of N trivial nodes runs in the same process, with the same inputs, three ways:
no checkpointer (the baseline), ``SqliteSaver`` on a file, and ``LetItLoopCheckpointSaver`` on a
journal in the same directory (its owner already running). Per-node overhead = (wall time with a
saver - baseline wall time of the same repetition) / N. Repetitions interleave the savers so a
noisy spell hits them alike; figures are medians, and the ratio is ours / SqliteSaver, for both
LangGraph durability modes ("sync": each checkpoint durable before the next node; "async").
Then the latest-checkpoint read (``get_tuple`` without a checkpoint id, what every ``invoke``
starts with) of each saver, on a finished thread and on one of ``--long`` checkpoints.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parents[1]
# this script is named langgraph.py: its own folder must not shadow the langgraph package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))


class State(TypedDict):
    n: int


def linear_graph(nodes: int, checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(State)
    names = [f"node{i}" for i in range(nodes)]
    for name in names:
        g.add_node(name, lambda s: {"n": s["n"] + 1})
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(checkpointer=checkpointer)


def timed(app: Any, thread: str | None, durability: str, nodes: int) -> float:
    config: Any = {"configurable": {"thread_id": thread}} if thread else {}
    t0 = time.perf_counter()
    out = app.invoke({"n": 0}, config, durability=durability) if thread else app.invoke({"n": 0})
    elapsed = time.perf_counter() - t0
    assert out["n"] == nodes, out
    return elapsed


def latest_read_ms(saver: Any, thread: str, calls: int = 100) -> float:
    """Median ms of reading a thread's latest checkpoint (what every invoke starts with)."""
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    assert saver.get_tuple(config) is not None
    took = []
    for _ in range(calls):
        t0 = time.perf_counter()
        saver.get_tuple(config)
        took.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(took)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--dir", default=None, help="scratch directory (default: under .bench/)")
    parser.add_argument("--json", metavar="OUT", help="write the medians to this JSON file")
    parser.add_argument("--long", type=int, default=1000, help="checkpoints of the long thread")
    args = parser.parse_args()
    reps = 3 if args.quick else 30
    base = Path(args.dir or ROOT / ".bench")
    base.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="lg-", dir=base))
    os.environ.setdefault("LIL_KEY_DIR", str(scratch / "keys"))
    os.environ["LIL_OWNER_IDLE"] = "900"
    from letitloop.journal.duckdb._client import open_journal, stop_owner

    journal_path = scratch / "journal" / "journal.duckdb"
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver

        from letitloop.adapters.langgraph import LetItLoopCheckpointSaver

        open_journal(journal_path).stats()  # the owner runs before timing starts
        sqlite = SqliteSaver(sqlite3.connect(scratch / "lg.sqlite", check_same_thread=False))
        savers = {
            "none": None,
            "sqlite": sqlite,
            "letitloop": LetItLoopCheckpointSaver(journal_path),
        }
        apps = {k: linear_graph(args.nodes, v) for k, v in savers.items()}
        results: dict[str, dict[str, list[float]]] = {}
        for durability in ("sync", "async"):
            per: dict[str, list[float]] = {"sqlite": [], "letitloop": []}
            for rep in range(reps + 1):  # the first repetition warms up
                baseline = timed(apps["none"], None, durability, args.nodes)
                for name in ("sqlite", "letitloop"):
                    wall = timed(apps[name], f"{durability}-{rep}", durability, args.nodes)
                    if rep:
                        per[name].append((wall - baseline) / args.nodes)
            results[durability] = per
        print(f"linear graph of {args.nodes} nodes, {reps} repetitions, medians per node")
        print(f"{'durability':<11}{'SqliteSaver':>14}{'letitloop':>14}{'ratio':>9}")
        for durability, per in results.items():
            sq, ours = statistics.median(per["sqlite"]), statistics.median(per["letitloop"])
            print(f"{durability:<11}{sq * 1e3:>11.3f} ms{ours * 1e3:>11.3f} ms{ours / sq:>8.2f}x")
        latest = {  # get_tuple of a thread without a checkpoint id: its latest checkpoint
            name: latest_read_ms(savers[name], f"sync-{reps}") for name in ("sqlite", "letitloop")
        }
        print(
            f"latest checkpoint read: {latest['sqlite']:.3f} ms SqliteSaver, "
            f"{latest['letitloop']:.3f} ms letitloop"
        )
        # the same read on a thread of many checkpoints (one graph invoked again and again)
        long_thread: Any = {"configurable": {"thread_id": "long"}}
        for _ in range(max(1, args.long // (args.nodes + 2))):
            for name in ("sqlite", "letitloop"):
                apps[name].invoke({"n": 0}, long_thread, durability="async")
        count = len(list(LetItLoopCheckpointSaver(journal_path).list(long_thread)))
        latest_long = {n: latest_read_ms(savers[n], "long") for n in ("sqlite", "letitloop")}
        print(
            f"latest checkpoint read, thread of {count} checkpoints: "
            f"{latest_long['sqlite']:.3f} ms SqliteSaver, {latest_long['letitloop']:.3f} ms "
            "letitloop"
        )
        if args.json:
            per_node = {
                d: {
                    "sqlite_ms": statistics.median(p["sqlite"]) * 1e3,
                    "letitloop_ms": statistics.median(p["letitloop"]) * 1e3,
                    "ratio": statistics.median(p["letitloop"]) / statistics.median(p["sqlite"]),
                }
                for d, p in results.items()
            }
            out = {
                "nodes": args.nodes,
                "reps": reps,
                "per_node": per_node,
                "latest_read_ms": latest,
                "long_thread_checkpoints": count,
                "latest_read_long_ms": latest_long,
            }
            Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        rows = open_journal(journal_path).list_runs(workflow="langgraph:graph", limit=1000)
        assert len(rows) == 2 * (reps + 1) + 1, len(rows)  # every thread is listed as a run
    finally:
        stop_owner(journal_path)
        shutil.rmtree(scratch, ignore_errors=True)
        try:
            base.rmdir()
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
