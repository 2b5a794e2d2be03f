"""Issue 29, point 1: the environment `make demo` builds (an editable install) has what a wheel
gives Jupyter: the prebuilt lab extension and the server extension's switch, so `jupyter lab`
from it shows the letitloop sidebar. An editable install skips pyproject's data-files."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("jupyterlab")


def test_make_demo_puts_the_jupyter_extensions_into_its_venv() -> None:
    plan = subprocess.run(
        ["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    assert "share/jupyter/labextensions/letitloop" in plan, plan
    assert "jupyter_server_config.d/letitloop.json" in plan, plan


def test_the_venv_make_demo_makes_lists_both_extensions(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # this venv reuses the packages of the one running the tests (no pip install here: the
    # recipe under test is what make adds after `pip install -e`, which skips data-files)
    site = Path(sysconfig.get_paths(vars={"base": str(venv)})["purelib"])
    (site / "shared.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (venv / ".installed").touch()  # `make install` is done: only the Jupyter step runs
    made = subprocess.run(
        ["make", "jupyter-dev", f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),  # nobody's own config or data
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
    }
    env.pop("JUPYTER_PATH", None)
    python = str(venv / "bin" / "python")

    def listed(module: str) -> str:
        out = subprocess.run(
            [python, "-m", module, "list"], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout + out.stderr

    labs = listed("jupyterlab.labextensions")
    assert f"{venv}/share/jupyter/labextensions" in labs, labs
    line = next(x for x in labs.splitlines() if x.strip().startswith("letitloop "))
    assert "enabled" in line and "OK" in line, labs
    servers = listed("jupyter_server.extension.serverextension")
    assert f"{venv}/etc/jupyter" in servers, servers
    line = next(x for x in servers.splitlines() if "letitloop.jupyter" in x)
    assert "enabled" in line, servers
    assert "OK" in servers.split("letitloop.jupyter", 1)[1].split("\n\n")[0], servers
