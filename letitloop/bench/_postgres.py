"""A throwaway PostgreSQL cluster for the frameworks that keep their progress there.

``initdb`` + ``pg_ctl`` into the scratch directory (as the ``postgres`` user when we are root,
since PostgreSQL refuses to run as root), listening on 127.0.0.1 on a free port with ``fsync``
and ``synchronous_commit`` on. A watchdog process stops it when the harness exits in any way.
``restart()`` is the fault: ``pg_ctl restart -m immediate``, a power cut as the server sees it.
With ``--pg URL`` (an existing server) there is no restart fault: the harness cannot restart a
server it did not start, and the output says so.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
}


class PgUnavailable(RuntimeError):
    """No PostgreSQL can be started here; the message says why and how to get one."""


def bin_dir() -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: [int(x) for x in re.findall(r"/(\d+)/bin", p)] or [0],
    )
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb")
    if which:
        return Path(which).resolve().parent
    raise PgUnavailable(
        "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: "
        "`apt-get install -y postgresql`, or give an existing server with --pg URL"
    )


def _as_server_user() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PgUnavailable("running as root, and there is no `postgres` user") from None
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


def _run(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"LC_ALL": "C"}
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd="/",
        check=False,
        **_as_server_user(),
    )


class Cluster:
    """A cluster this process started (``start``) or an external server (``external``)."""

    def __init__(self, dsn: str, base: Path | None = None, bins: Path | None = None) -> None:
        self.dsn = dsn
        self.base = base
        self.bins = bins
        self._watch_fd: int | None = None

    @property
    def managed(self) -> bool:
        return self.base is not None

    @classmethod
    def start(cls, base: Path) -> Cluster:
        bins = bin_dir()
        user = _as_server_user()
        base.mkdir(parents=True, exist_ok=True)
        if user:
            entry = pwd.getpwnam("postgres")
            os.chown(base, entry.pw_uid, entry.pw_gid)
        cluster = cls("", base, bins)
        read_fd, write_fd = os.pipe()
        subprocess.Popen(
            [sys.executable, "-m", "letitloop.bench._postgres", str(read_fd), str(bins), str(base)],
            pass_fds=(read_fd,),
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(read_fd)
        cluster._watch_fd = write_fd
        data = base / "data"
        init = _run(
            [
                str(bins / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        )
        if init.returncode != 0:
            cluster.close()
            raise PgUnavailable(f"initdb failed: {init.stderr.strip()[-500:]}")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        conf = dict(SETTINGS, port=str(port), unix_socket_directories=f"'{base}'")
        with open(data / "postgresql.conf", "a") as f:
            f.write("".join(f"\n{k} = {v}" for k, v in conf.items()) + "\n")
        cluster.dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        cluster._ctl("-l", str(base / "server.log"), "-w", "-t", "120", "start")
        return cluster

    def _ctl(self, *args: str) -> None:
        assert self.base is not None and self.bins is not None
        done = _run([str(self.bins / "pg_ctl"), "-D", str(self.base / "data"), *args], 180)
        if done.returncode != 0:
            raise PgUnavailable(f"pg_ctl {' '.join(args)} failed: {done.stderr.strip()[-500:]}")

    def restart(self) -> None:
        """The fault: a crash and restart of the server (``-m immediate``)."""
        assert self.base is not None
        self._ctl(
            "-m", "immediate", "-l", str(self.base / "server.log"), "-w", "-t", "120", "restart"
        )

    def database(self, prefix: str) -> str:
        """A fresh database; its URL."""
        import psycopg

        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=20) as conn:
            conn.execute(f'CREATE DATABASE "{name}"'.encode())
        return self.dsn.rsplit("/", 1)[0] + "/" + name

    def close(self) -> None:
        if self.base is not None:
            with contextlib.suppress(Exception):
                self._ctl("-m", "fast", "-w", "-t", "60", "stop")
            shutil.rmtree(self.base, ignore_errors=True)
        if self._watch_fd is not None:
            os.close(self._watch_fd)
            self._watch_fd = None


def _watch(fd: int, bins: str, base: str) -> None:
    """Block until the harness exits (EOF), then stop the cluster and remove its folder."""
    with contextlib.suppress(OSError):
        while os.read(fd, 1):
            pass
    data = Path(base) / "data"
    if (data / "postmaster.pid").exists():
        with contextlib.suppress(Exception):
            _run([str(Path(bins) / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        time.sleep(0.2)
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    _watch(int(sys.argv[1]), sys.argv[2], sys.argv[3])
