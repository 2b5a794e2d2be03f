"""benchmarks/peers.py keeps working: a quick run on letitloop and LangGraph, its JSON's shape.

The numbers are not checked (a shared machine makes them noise); what is checked is that every
figure is there for both peers, that the peers not run say why, and that the Markdown table for
the README has a row per figure and a column per peer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_peers_quick_run_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "peers.py"), "--quick"]
    cmd += ["--only", "letitloop,langgraph", "--json", str(out), "--dir", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())

    meta = data["meta"]
    for key in ("date", "commit", "machine", "python", "loadavg_start", "loadavg_end"):
        assert meta[key], key
    assert data["floor"]["median"] > 0
    for peer in ("letitloop", "langgraph"):
        entry = data["peers"][peer]
        assert "skipped" not in entry, entry
        assert entry["durability"] and entry["versions"]["packages"], entry
        for fig in ("per_step", "resume_in_process", "resume_process", "import_over_bare"):
            assert entry[fig]["n"] >= 1 and entry[fig]["median"] == entry[fig]["median"], fig
        assert entry["writers"]["runs"] and entry["writers"]["steps_per_s"] > 0
    for peer in ("dbos", "prefect"):
        assert data["peers"][peer]["skipped"] == "not selected (--only)"
    assert data["figures"]["per_step_ms"]["ratio_to_letitloop"]["letitloop"] == 1.0
    assert data["figures"]["per_step_ms"]["ratio_to_letitloop"]["langgraph"] > 0
    assert data["figures"]["writers_steps_per_s"]["median"]["dbos"] is None

    table = data["markdown"].splitlines()
    assert table[0].startswith("| | letitloop | LangGraph + SqliteSaver | DBOS")
    rows = [line for line in table[2:] if line.startswith("| ")]
    assert len(rows) == 5, table
    assert all(line.count("|") == 6 for line in rows), rows
    assert "not run" in rows[0] and meta["commit"] in data["markdown"]
    assert data["markdown"] in done.stdout
    assert not list(tmp_path.glob("peers-*")), "the scratch directory is removed"
