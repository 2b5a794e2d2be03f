"""One real JupyterLab for every browser test (``tests/notebook``, ``tests/jupyter``): a hermetic
server on a free port whose kernels load letitloop and use the test's journal, optionally with
letitloop's server and lab extensions and a ``jupyter_server_config.json`` (jupyter-lsp), plus
the flags headless Debian Chromium needs here."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUILT = ROOT / "letitloop" / "jupyter" / "labextension"  # the committed prebuilt lab extension
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROME_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prepare(state: Path, extensions: bool, server_config: dict[str, Any] | None) -> None:
    """Config, user settings and IPython profile under ``state``, as a user's would be."""
    settings = state / ".cfg" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    if server_config is not None:
        (state / ".cfg" / "jupyter_server_config.json").write_text(json.dumps(server_config))
    if extensions:
        data = state / ".data" / "labextensions"
        data.mkdir(parents=True)
        (data / "letitloop").symlink_to(BUILT)  # what the wheel installs into share/jupyter
    startup = state / ".ipython" / "profile_default"
    startup.mkdir(parents=True)  # the kernel loads the extension, as a user's config would
    (startup / "ipython_kernel_config.py").write_text("c.IPKernelApp.extensions = ['letitloop']\n")


@contextmanager
def jupyter_lab(
    root: Path,
    journal: Path | None,
    *,
    state: Path | None = None,
    extensions: bool = False,
    server_config: dict[str, Any] | None = None,
    pythonpath: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
) -> Iterator[dict[str, Any]]:
    """JupyterLab serving ``root``, stopped after (by its own pid). ``state`` holds its config,
    runtime files and ``lab.log`` (default: ``root``); ``extensions`` adds letitloop's server
    extension and prebuilt lab extension; ``server_config`` is written as the server's
    ``jupyter_server_config.json``; ``env`` is added to the server's (and kernels') environment.
    With ``journal`` None, no LIL_JOURNAL: the server finds its journal from ``root``.
    Yields ``base`` (the URL), ``token``, ``root`` and ``log``."""
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: make test installs it"
    state = state or root
    _prepare(state, extensions, server_config)
    token, port = secrets.token_hex(16), free_port()
    environ = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(state / ".cfg"),
        JUPYTER_RUNTIME_DIR=str(state / ".runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(state / ".workspaces"),
        IPYTHONDIR=str(state / ".ipython"),
        PYTHONPATH=os.pathsep.join([str(ROOT), *map(str, pythonpath)]),
    )
    environ.pop("LIL_JOURNAL", None)
    if journal is not None:
        environ["LIL_JOURNAL"] = str(journal)
    environ.update(env or {})
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.open_browser=False",
        "--LabApp.news_url=None",
        "--allow-root",
    ]
    if extensions:
        environ["JUPYTER_PATH"] = str(state / ".data")
        argv.append('--ServerApp.jpserver_extensions={"letitloop.jupyter": True}')
    log_path = state / "lab.log"
    log = open(log_path, "w")  # noqa: SIM115
    proc = subprocess.Popen(argv, env=environ, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.25)
        yield {"base": base, "token": token, "root": root, "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
