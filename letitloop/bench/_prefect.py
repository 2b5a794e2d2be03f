"""Prefect's API server, started once for the whole run and never faulted.

Without ``PREFECT_API_URL`` every Prefect process starts a temporary server of its own (5-10 s
here, and it outlives a SIGKILLed parent), so each restart would pay that. A deployed Prefect
talks to a long-lived server; the harness runs one (``prefect server start`` in Prefect's own
environment, SQLite in the scratch directory) and the workers point at it. The server takes
minutes to migrate on a first start on a loaded machine: it gets ``STARTUP_S``. Its process
group is ended at the end of the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

STARTUP_S = 600.0


class PrefectServer:
    """A running ``prefect server start`` (``api_url``), or why it is not (``why``)."""

    def __init__(self, proc: subprocess.Popen[bytes] | None, api_url: str, why: str) -> None:
        self.proc = proc
        self.api_url = api_url
        self.why = why

    @classmethod
    def start(cls, python: str, env: dict[str, str], scratch: Path) -> PrefectServer:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = scratch / "prefect-server.log"
        server_env = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
        with log.open("ab") as out:
            proc = subprocess.Popen(
                # `python -m prefect`, not the venv's `prefect` script: its shebang names the
                # directory the venv was built in, and a venv that moved since breaks it
                [
                    python,
                    "-m",
                    "prefect",
                    "server",
                    "start",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ],
                env=server_env,
                cwd=scratch,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}/api"
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-500:]
                return cls(None, "", f"prefect server exited ({proc.returncode}): {tail}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(url + "/health", timeout=5) as resp,
            ):
                if resp.status == 200:
                    return cls(proc, url, "")
            time.sleep(0.5)
        server = cls(proc, "", f"not healthy after {STARTUP_S:.0f} s")
        server.stop()
        return server

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(20)
        self.proc = None
