"""LangGraph's own tests of the three regressions of issue 35 (point 14), against all three savers.

``benchmarks/langgraph_suite.py`` runs LangGraph's suite (from the sdist on PyPI of the
installed version) with InMemorySaver, SqliteSaver and this saver; the whole suite takes
about 45 minutes here, so CI runs the three upstream tests that found the regressions, in
LangGraph's default mode (where they failed; ``test_langgraph_types.py`` covers the strict
mode): ``test_conditional_state_graph`` and ``test_conditional_graph_state`` (an
``AgentAction`` came back as a dict) and ``test_interrupt_functional_pydantic`` (a pydantic
model came back as a dict). The same runner and shim as the benchmark, so this also checks
that the shim still fits upstream's fixtures. The sdist comes from PyPI once, then the cache.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = ["tests/test_large_cases.py", "tests/test_large_cases_async.py", "tests/test_pydantic.py"]
TESTS = {
    "tests/test_large_cases.py::test_conditional_state_graph",
    "tests/test_large_cases_async.py::test_conditional_graph_state",
    "tests/test_pydantic.py::test_interrupt_functional_pydantic",
}


def test_langgraph_s_own_tests_of_the_regressions_pass_with_every_saver(tmp_path: Path) -> None:
    report_path = tmp_path / "suite.json"
    select = " or ".join(t.split("::")[1] for t in sorted(TESTS))
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "langgraph_suite.py"), *FILES]
        + ["--modes", "default", "-k", select, "--json", str(report_path)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    report = json.loads(report_path.read_text())
    entry = report["modes"]["default"]
    for saver in ("memory", "sqlite", "letitloop"):
        assert entry["outcomes"][saver] == dict.fromkeys(TESTS, "passed"), saver
    assert entry["regressions"] == {"memory": [], "sqlite": []}
