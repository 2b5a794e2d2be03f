"""`lil runs show` lists a map's items: each item's child run, its status, in item order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import _kill_owner
from tests.helpers import Lil, child_env

FLOW = """
from letitloop import durable, step

def maybe(i):
    if i == 3:
        raise ValueError("three")
    return i * i

@durable(name="cli_fan")
def fan(n):
    return step.map("sq", maybe, range(n), max_in_flight=1)

fan(5)
"""


def test_runs_show_lists_the_items_of_a_map(tmp_path: Path) -> None:
    journal = tmp_path / "j.duckdb"
    env = child_env(journal)
    lil = Lil(env)
    try:
        ran = subprocess.run([sys.executable, "-c", FLOW], env=env, capture_output=True, text=True)
        assert ran.returncode == 1 and "MapItemError" in ran.stderr
        shown = lil.run("runs", "show", "cli_fan:")
        assert shown.returncode == 0, shown.stderr
        assert "map 'sq' at position 0: 3 completed, 1 failed of 4 items" in shown.stdout
        rows = [r.split() for r in shown.stdout.splitlines() if r.split()[1:2] and ".e0.p0." in r]
        rows = [r for r in rows if r[0].isdigit() and r[1].startswith("cli_fan.sq:")]
        assert [(r[0], r[2]) for r in rows] == [
            ("0", "completed"),
            ("1", "completed"),
            ("2", "completed"),
            ("3", "failed"),
        ]
        (m,) = lil.json("runs", "show", "cli_fan:", "--json")["maps"]
        assert m["counts"] == {"completed": 3, "failed": 1}
        assert [i["index"] for i in m["items"]] == [0, 1, 2, 3]
    finally:
        _kill_owner(journal)
