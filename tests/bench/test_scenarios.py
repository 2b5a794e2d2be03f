"""Scenario files: the shipped ones load; a missing or malformed one is a clear error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from letitloop.bench._errors import ScenarioError
from letitloop.bench._scenario import SHIPPED, load, shipped_paths

ROOT = Path(__file__).resolve().parents[2]
CHAIN = (ROOT / "letitloop" / "bench" / "scenarios" / "chain.toml").read_text()


def test_every_shipped_scenario_loads_with_its_plan() -> None:
    loaded = {s.name: s for s in map(load, shipped_paths())}
    assert list(loaded) == list(SHIPPED)
    assert loaded["chain"].calls == 8 and loaded["chain"].effects == 0
    assert loaded["tool"].effects == 2
    assert [op["op"] for op in loaded["approval"].plan].count("ask") == 1
    assert loaded["fanout"].calls == 8  # the call that fans out, 6 items, the reduce
    assert {op["lane"] for op in loaded["handoff"].plan} == {"researcher", "writer", "reviewer"}
    for sc in loaded.values():  # every side effect or question follows the call deciding it
        for before, op in zip(sc.plan, sc.plan[1:], strict=False):
            if op["op"] in ("effect", "ask"):
                assert before["op"] == "call" and op["seq"] == before["seq"] + 1, sc.name


def test_a_missing_file_says_so_and_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as err:
        load(tmp_path / "nope.toml")
    assert "does not exist" in err.value.message and "lil bench --list" in (err.value.fix or "")


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("x = [", "not valid TOML"),
        (CHAIN.replace("lil-bench-scenario/1", "v0"), "format is 'v0'"),
        (CHAIN.replace('kind = "chain"', 'kind = "loop"'), "kind is 'loop'"),
        (CHAIN.replace("calls = 8", "calls = 0"), "chain.calls is 0"),
        (CHAIN.replace("calls = 8", 'calls = "8"'), "chain.calls is '8'"),
        (CHAIN.replace("[chain]\ncalls = 8", ""), "chain is missing"),
        (CHAIN.replace("latency_ms = 40", "latency_ms = -1"), "model.latency_ms is -1"),
    ],
)
def test_a_malformed_file_names_the_field(tmp_path: Path, text: str, names: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        load(path)
    assert names in err.value.message and str(path) in err.value.message
    assert err.value.fix


def test_a_bad_effect_and_a_binary_file(tmp_path: Path) -> None:
    tool = (ROOT / "letitloop" / "bench" / "scenarios" / "tool.toml").read_text()
    path = tmp_path / "tool.toml"
    path.write_text(tool.replace('"pay alice 40"', '"pay alice lots"'))
    with pytest.raises(ScenarioError, match=r"tool.actions\[1\]"):
        load(path)
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load(path)


def test_lil_bench_with_a_missing_scenario_exits_1_with_the_fix(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "letitloop", "bench", "--scenario", str(tmp_path / "x.toml")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 1
    assert "error: scenario file" in done.stderr and "does not exist" in done.stderr
    assert "fix:" in done.stderr and done.stdout == ""
