"""The smolagents adapter's edges (refusals, the alias, failures, approvals, a changed workflow),
each check run in ``.venvs/smolagents``; and its import stays lazy."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.adapters.conftest import ROOT, framework_python
from tests.adapters.test_adapter_docs import framework_env
from tests.conftest import modules_after

CHECKS = ROOT / "tests" / "adapters" / "frameworks" / "smol_checks.py"
NAMES = re.findall(r"^def check_(\w+)", CHECKS.read_text(), re.M)


@pytest.mark.parametrize("name", NAMES)
def test_adapter_check(name: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [str(framework_python("smolagents")), str(CHECKS), name],
        capture_output=True,
        text=True,
        env=framework_env(tmp_path / "home"),
        timeout=180,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-4000:]


def test_checks_are_found() -> None:
    assert len(NAMES) >= 8, NAMES


def test_importing_letitloop_adapters_imports_no_framework() -> None:
    loaded = modules_after("import letitloop, letitloop.adapters")
    assert not [m for m in loaded if m.split(".")[0] == "smolagents"]
    assert "letitloop.adapters.smolagents" not in loaded
    assert "letitloop.adapters._smol_journal" not in loaded


def test_letitloop_adapters_stays_lazy_where_smolagents_is_installed(tmp_path: Path) -> None:
    code = (
        "import sys, json, letitloop, letitloop.adapters\n"
        "before = sorted(m for m in sys.modules if m.startswith('smolagents'))\n"
        "import letitloop.adapters.smolagents\n"
        "print(json.dumps([before, 'smolagents' in sys.modules]))"
    )
    out = subprocess.run(
        [str(framework_python("smolagents")), "-c", code],
        capture_output=True,
        text=True,
        env=framework_env(tmp_path / "home"),
        timeout=180,
        cwd=tmp_path,
        check=True,
    )
    assert json.loads(out.stdout) == [[], True]


def test_without_smolagents_the_adapter_says_how_to_install_it() -> None:
    from letitloop.errors import ConfigError

    with pytest.raises(ConfigError, match=r"letitloop\[smolagents\]"):
        import letitloop.adapters.smolagents  # noqa: F401  # the main environment lacks it
