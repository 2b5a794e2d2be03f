"""Prefect's API server starts from an environment that moved since it was built.

A venv's console scripts name, in their shebang, the interpreter of the directory the venv was
built in; `.venvs/peers-prefect` built in one worktree and used from another (or copied) has a
`prefect` script that cannot start. The harness runs `python -m prefect` instead. This test gives
it an interpreter whose sibling `prefect` script points nowhere and a stand-in `prefect` package
whose `server start --host H --port P` serves `/api/health` (Prefect itself lives in
`.venvs/peers-prefect`, which `make bench-durability` builds and `lil bench` runs for real): the
server must come up through `-m`, answer, and be stopped with its process group.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

from letitloop.bench._prefect import PrefectServer

STAND_IN = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
assert args[:2] == ["server", "start"], args
host, port = args[args.index("--host") + 1], int(args[args.index("--port") + 1])


class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args):
        pass


ThreadingHTTPServer((host, port), Health).serve_forever()
"""


def test_the_server_starts_from_a_moved_environment(tmp_path: Path) -> None:
    package = tmp_path / "site" / "prefect"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(STAND_IN)
    bin_dir = tmp_path / "moved" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    stale = bin_dir / "prefect"  # what a moved venv's console script looks like
    stale.write_text("#!/gone/since/the/venv/moved/bin/python\nimport sys\n")
    for script in (python, stale):
        script.chmod(0o700)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "PATH": f"{bin_dir}:/usr/bin:/bin"}
    server = PrefectServer.start(str(python), env, scratch)
    try:
        assert server.why == "" and server.api_url, server.why
        with urllib.request.urlopen(server.api_url + "/health", timeout=30) as resp:
            assert resp.status == 200
    finally:
        server.stop()
    assert server.proc is None
