"""Every ```python FRAMEWORK block in docs/adapters.md runs in that framework's own environment,
in a fresh interpreter and journal (the plain ```python blocks are run by tests/test_docs.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.adapters.conftest import ROOT, framework_python
from tests.helpers import child_env

DOC = ROOT / "docs" / "adapters.md"
FRAMEWORKS = ("smolagents", "autogen", "crewai")
BLOCKS = [
    pytest.param(name, block, id=f"{name}:{n}")
    for n, (name, block) in enumerate(
        re.findall(r"```python (\w+)\n(.*?)```", DOC.read_text(), re.S)
    )
]


def framework_env(home: Path) -> dict[str, str]:
    """An environment that keeps frameworks off the network and out of the user's home."""
    return child_env(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_TRACING_ENABLED="false",
        CREWAI_DISABLE_VERSION_CHECK="true",
        OTEL_SDK_DISABLED="true",
        HF_HUB_OFFLINE="1",
    )


def test_every_framework_has_a_recipe() -> None:
    names = {p.values[0] for p in BLOCKS}
    assert names == set(FRAMEWORKS), f"docs/adapters.md has recipes for {sorted(names)}"


@pytest.mark.parametrize(("name", "block"), BLOCKS)
def test_adapter_recipe_runs(name: str, block: str, tmp_path: Path) -> None:
    assert name in FRAMEWORKS, f"unknown framework tag {name!r} in docs/adapters.md"
    journal = tmp_path / "journal.duckdb"
    script = tmp_path / "recipe.py"
    script.write_text(block)
    env = {**framework_env(tmp_path / "home"), "LIL_JOURNAL": str(journal)}
    try:
        out = subprocess.run(
            [str(framework_python(name)), str(script)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stderr[-4000:]
    finally:
        from tests.conftest import _kill_owner

        _kill_owner(journal)
