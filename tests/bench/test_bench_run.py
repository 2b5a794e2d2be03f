"""``lil bench`` for real, short: letitloop and LangGraph + SqliteSaver under seeded faults, the
planted bug caught, and a signed receipt that ties the printed table to its run.

Every worker is a real process killed by a real signal (or the OOM killer where the machine
allows a memory cgroup); the figures come from the counter server. LangGraph runs in
.venvs/peers-langgraph when `make bench-durability` built it, else in this interpreter (which
has langgraph-checkpoint-sqlite from the dev extra).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "letitloop" / "bench" / "scenarios"


def bench(*args: str, timeout: float = 300) -> tuple[dict[str, Any], str]:
    cmd = [sys.executable, "-m", "letitloop", "bench", "--json", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout), done.stderr


def test_letitloop_and_langgraph_under_faults() -> None:
    data, progress = bench(
        "--frameworks",
        "letitloop,langgraph",
        "--kills",
        "3",
        "--seed",
        "11",
        "--scenario",
        str(SCENARIOS / "chain.toml"),
        "--scenario",
        str(SCENARIOS / "tool.toml"),
    )
    assert data["meta"]["seed"] == 11 and data["meta"]["kills"] == 3
    ours = data["frameworks"]["letitloop"]
    for name in ("chain", "tool"):
        sc = ours["scenarios"][name]
        t = sc["totals"]
        assert t["kills"] >= 3, sc
        assert t["lost"] == 0 and t["duplicate_effects"] == 0, t
        assert t["max_rerun_per_kill"] <= 1, t  # at most the call in flight
        assert t["right"] == t["trials"] == t["finished"], t
        for trial in sc["trials"]:
            for fault in trial["faults"]:  # every kill point is printed, to replay the row
                assert fault["where"] in progress
    peer = data["frameworks"]["langgraph"]
    assert "skipped" not in peer, peer
    assert peer["versions"]["langgraph"] and peer["scenarios"]["chain"]["totals"]["kills"] >= 3
    clean = peer["scenarios"]["chain"]["clean"]
    assert clean["calls"] == 8 and clean["answer"] == ours["scenarios"]["chain"]["clean"]["answer"]
    for fw in ("dbos", "prefect", "crewai"):
        assert fw not in data["frameworks"]


def test_the_planted_bug_shows_lost_work() -> None:
    data, _ = bench(
        "--frameworks",
        "letitloop",
        "--planted-bug",
        "--kills",
        "3",
        "--seed",
        "5",
        "--scenario",
        str(SCENARIOS / "chain.toml"),
    )
    lossy = data["frameworks"]["letitloop-lossy"]["scenarios"]["chain"]["totals"]
    ours = data["frameworks"]["letitloop"]["scenarios"]["chain"]["totals"]
    assert lossy["lost"] > 0 and lossy["max_rerun_per_kill"] > 1, lossy
    assert ours["lost"] == 0, ours
    assert data["verdict"]["planted_bug"] == "caught"


def test_a_signed_receipt_ties_the_results_to_the_run(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("0123456789abcdef0123456789abcdef")
    receipt, results = tmp_path / "receipt.json", tmp_path / "results.json"
    cmd = [sys.executable, "-m", "letitloop", "bench", "--frameworks", "letitloop", "--kills", "1"]
    cmd += ["--scenario", str(SCENARIOS / "chain.toml"), "--markdown"]
    cmd += ["--receipt", str(receipt), "--key-file", str(key), "--out", str(results)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("| framework |") and "letitloop (DuckDB)" in done.stdout
    signed = json.loads(receipt.read_text())
    assert signed["payload"]["exit_code"] == 0 and signed["signatures"]
    assert "bench" in signed["payload"]["command"]
    check = [sys.executable, "-m", "letitloop", "bench", "--from", str(results), "--markdown"]
    check += ["--receipt", str(receipt)]
    again = subprocess.run(check, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert again.returncode == 0 and again.stdout == done.stdout
    data = json.loads(results.read_text())
    data["frameworks"]["letitloop"]["scenarios"]["chain"]["totals"]["lost"] = 0
    results.write_text(json.dumps(data, indent=1) + "\n" + " ")  # edited after the run
    bad = subprocess.run(check, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 1 and "is not the output" in bad.stderr
