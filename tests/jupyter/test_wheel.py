"""The wheel ships the prebuilt lab extension and the server extension's switch: in a fresh venv
with only the wheel (and its ``jupyterlab`` extra) installed, Jupyter lists both enabled. Slow
(it installs JupyterLab from the package index into the new venv): one test."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.timeout(900)
def test_wheel_installs_the_lab_extension_enabled(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [wheel] = out.glob("letitloop-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    data = "letitloop-0.1.0.data/data/"
    assert f"{data}share/jupyter/labextensions/letitloop/package.json" in names
    assert any(
        n.startswith(f"{data}share/jupyter/labextensions/letitloop/static/remoteEntry.")
        for n in names
    )
    assert f"{data}etc/jupyter/jupyter_server_config.d/letitloop.json" in names
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", f"{wheel}[jupyterlab]"],
        check=True,
        capture_output=True,
        timeout=900,
        cwd=tmp_path,
    )
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    labs = subprocess.run(
        [str(venv / "bin" / "jupyter"), "labextension", "list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    text = ANSI.sub("", labs.stdout + labs.stderr)
    assert re.search(r"letitloop v0\.1\.0 enabled\s+OK \(python, letitloop\)", text), text
    servers = subprocess.run(
        [str(venv / "bin" / "jupyter"), "server", "extension", "list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    text = ANSI.sub("", servers.stdout + servers.stderr)
    assert re.search(r"letitloop\.jupyter enabled", text) and "letitloop.jupyter  OK" in text, text
