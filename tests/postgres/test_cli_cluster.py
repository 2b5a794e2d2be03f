"""The throwaway PostgreSQL cluster the suite runs on (``tests/pg_cluster.py``).

Durability settings are what the journal's guarantees are tested under, every test gets an empty
database of its own, and no postmaster outlives the process that started it, even a SIGKILLed one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from tests.helpers import ROOT, pid_alive, wait_until


def test_cluster_commits_durably_on_tcp_and_socket(pg_server: Any, pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        fsync, sync_commit = conn.execute(
            "SELECT current_setting('fsync'), current_setting('synchronous_commit')"
        ).fetchone()  # type: ignore[misc]
    assert (fsync, sync_commit) == ("on", "on")
    if pg_server.managed:
        with psycopg.connect(pg_server.socket_dsn()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    assert os.environ["LIL_TEST_PG_DSN"] == pg_server.dsn


def test_each_test_gets_an_empty_database_of_its_own(pg_server: Any, pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE mine (x int)")
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
    assert tables == (1,)
    other = pg_server.create_database()
    try:
        with psycopg.connect(pg_dsn.rsplit("/", 1)[0] + "/" + other) as conn:
            assert conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone() == (0,)
    finally:
        pg_server.drop_database(other)


_STARTER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.pg_cluster import start_cluster
s = start_cluster()
pid = open(s.data_dir / "postmaster.pid").readline().strip()
print(pid, s.base_dir, flush=True)
time.sleep(600)
"""


def test_a_sigkilled_starter_leaves_no_postmaster_and_no_directory(pg_server: Any) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LIL_TEST_PG_DSN"}
    starter = subprocess.Popen(
        [sys.executable, "-c", _STARTER.format(root=str(ROOT))],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert starter.stdout is not None
    line = starter.stdout.readline().split()
    postmaster, base = int(line[0]), Path(line[1])
    assert pid_alive(postmaster) and (base / "data" / "postmaster.pid").exists()
    starter.send_signal(signal.SIGKILL)
    starter.wait(timeout=10)
    wait_until(
        lambda: not pid_alive(postmaster) and not base.exists(),
        30,
        what=lambda: (
            "the postmaster to end with its starter and its directory to go (postmaster "
            f"alive: {pid_alive(postmaster)}, directory left behind: {base.exists()})"
        ),
    )


_CHILD_TEST = """
import os

def test_server(pg_server, pg_dsn):
    print("MANAGED", pg_server.managed, pg_server.dsn == os.environ["LIL_TEST_PG_DSN"], flush=True)
"""


def _child_pytest(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_child.py").write_text(_CHILD_TEST)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"]
        + ["-p", "tests.conftest", "--rootdir", str(tmp_path), str(tmp_path / "test_child.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
        check=False,
    )


def test_lil_test_pg_dsn_points_the_suite_at_an_existing_server(
    pg_server: Any, tmp_path: Path
) -> None:
    env = dict(os.environ, LIL_TEST_PG_DSN=pg_server.dsn, PYTHONPATH=str(ROOT))
    done = _child_pytest(tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MANAGED False True" in done.stdout  # no cluster of its own: the given server


def test_missing_server_binaries_fail_with_the_install_command(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LIL_TEST_PG_DSN"}
    env.update(LIL_PG_BIN=str(tmp_path / "nowhere"), PYTHONPATH=str(ROOT))
    done = _child_pytest(tmp_path, env)
    assert done.returncode == 1, done.stdout  # an error, never a skip
    assert "apt-get install -y postgresql" in done.stdout
    assert "1 error" in done.stdout and "skipped" not in done.stdout
