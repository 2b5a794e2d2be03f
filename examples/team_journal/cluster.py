"""A throwaway PostgreSQL server for the team journal: initdb and pg_ctl into a temporary folder.

    python cluster.py start     start it (once), with the database the journal URL names
    python cluster.py status    say whether it runs, and where
    python cluster.py stop      stop it and delete its folder

The port and database come from ``[tool.letitloop] journal`` in this folder's pyproject.toml,
the journal every letitloop command here uses. The server listens on 127.0.0.1 only, with
``trust`` authentication: fine for trying things on your own machine, not for a team's server
(see docs/postgres.md for roles). As root, the server runs as the ``postgres`` user, since
PostgreSQL refuses to run as root. It needs PostgreSQL's server binaries (Debian:
``apt-get install postgresql``); LIL_PG_BIN names their folder if they are elsewhere.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
STATE = HERE / ".letitloop" / "postgres.json"  # where the running server's folder is


def journal_url() -> str:
    config = tomllib.loads((HERE / "pyproject.toml").read_text())
    return str(config["tool"]["letitloop"]["journal"])


def bin_dir() -> Path:
    """The folder of initdb and pg_ctl: $LIL_PG_BIN, Debian's newest version, or the PATH."""
    if os.environ.get("LIL_PG_BIN"):
        return Path(os.environ["LIL_PG_BIN"])
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    sys.exit("error: initdb was not found\n  fix: apt-get install postgresql, or set LIL_PG_BIN")


def as_server_user() -> dict[str, Any]:
    """Run a command as ``postgres`` when we are root (PostgreSQL will not run as root)."""
    if os.geteuid() != 0:
        return {}
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


def run(*cmd: str | Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")} | {"LC_ALL": "C"}
    done = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, env=env, cwd="/", **as_server_user()
    )
    if done.returncode != 0:
        sys.exit(f"error: {Path(cmd[0]).name} failed: {done.stderr.strip() or done.stdout.strip()}")


def running(state: dict[str, Any]) -> bool:
    pid_file = Path(state["base"]) / "data" / "postmaster.pid"
    return pid_file.exists()


def start() -> int:
    url = urlsplit(journal_url())
    if STATE.exists() and running(json.loads(STATE.read_text())):
        print(f"already running: {journal_url()}")
        return 0
    pg = bin_dir()
    base = Path(tempfile.mkdtemp(prefix="team-journal-pg-"))
    if os.geteuid() == 0:
        os.chown(base, pwd.getpwnam("postgres").pw_uid, pwd.getpwnam("postgres").pw_gid)
    data = base / "data"
    run(pg / "initdb", "-D", data, "-U", url.username or "postgres", "--auth=trust", "-E", "UTF8")
    with (data / "postgresql.conf").open("a") as f:
        f.write(f"listen_addresses = '127.0.0.1'\nport = {url.port}\n")
        f.write(f"unix_socket_directories = '{base}'\n")
    run(pg / "pg_ctl", "-D", data, "-l", base / "server.log", "-w", "-t", "60", "start")
    STATE.parent.mkdir(exist_ok=True)
    STATE.write_text(json.dumps({"base": str(base), "bin": str(pg)}))
    database = url.path.lstrip("/")
    admin = url._replace(path="/postgres").geturl()
    for _ in range(50):  # the server may take a moment to accept TCP connections
        try:
            create(admin, database)
            break
        except OSError:
            time.sleep(0.2)
    print(f"PostgreSQL is running in {base}; the journal is {journal_url()}")
    return 0


def create(admin_url: str, database: str) -> None:
    import psycopg

    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{database}"'.encode())
    except psycopg.OperationalError as exc:
        raise OSError(str(exc)) from exc


def stop() -> int:
    if not STATE.exists():
        print("no server of this folder is running")
        return 0
    state = json.loads(STATE.read_text())
    if running(state):
        run(Path(state["bin"]) / "pg_ctl", "-D", Path(state["base"]) / "data", "-m", "fast", "stop")
    shutil.rmtree(state["base"], ignore_errors=True)
    STATE.unlink()
    print(f"stopped and deleted {state['base']}")
    return 0


def status() -> int:
    if STATE.exists() and running(state := json.loads(STATE.read_text())):
        print(f"running in {state['base']}; the journal is {journal_url()}")
        return 0
    print("not running: python cluster.py start")
    return 1


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    actions = {"start": start, "stop": stop, "status": status}
    if command not in actions:
        sys.exit(__doc__)
    sys.exit(actions[command]())
