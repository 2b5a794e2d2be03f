"""Prefect's API server starts from an environment that moved since it was built.

A venv's console scripts name, in their shebang, the interpreter of the directory the venv was
built in; `.venvs/peers-prefect` built in one worktree and used from another (or copied) has a
`prefect` script that cannot start. The harness runs `python -m prefect` instead: this test gives
it an interpreter whose sibling `prefect` script points nowhere, and a real server must come up.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest

from letitloop.bench._prefect import PrefectServer

ROOT = Path(__file__).resolve().parents[2]
PREFECT_PYTHON = ROOT / ".venvs" / "peers-prefect" / "bin" / "python"


@pytest.mark.slow
@pytest.mark.skipif(
    not (ROOT / ".venvs" / "peers-prefect" / ".installed").exists(),
    reason="Prefect's environment is built by `make bench-durability` (.venvs/peers-prefect)",
)
def test_the_server_starts_from_a_moved_environment(tmp_path: Path) -> None:
    bin_dir = tmp_path / "moved" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{PREFECT_PYTHON}" "$@"\n')
    stale = bin_dir / "prefect"  # what a moved venv's console script looks like
    stale.write_text("#!/gone/since/the/venv/moved/bin/python\nimport sys\n")
    for script in (python, stale):
        script.chmod(0o700)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {
        **os.environ,
        "PREFECT_HOME": str(scratch / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    server = PrefectServer.start(str(python), env, scratch)
    try:
        assert server.why == "" and server.api_url, server.why
        with urllib.request.urlopen(server.api_url + "/health", timeout=30) as resp:
            assert resp.status == 200
    finally:
        server.stop()
    assert server.proc is None
