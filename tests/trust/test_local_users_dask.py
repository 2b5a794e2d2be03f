"""A Dask cluster that ``DaskExecutor()`` starts admits only its user (issue 35, point 1).

Real parts: a real LocalCluster of 2 worker processes started by ``DaskExecutor()``, a real
second OS user (``useradd``) who finds the cluster's ports and tries what ``distributed`` lets
anyone do with them: ``Client(...).run``, ``run_on_scheduler``, ``submit``, a bare ``rpc.run``
to each worker and nanny, over TLS as found, plain TCP, and TLS with credentials of its own. On
the old code the scheduler listened on ``tcp://127.0.0.1`` without authentication, the
intruder's function ran as root and wrote into root's 0700 directory, and the dashboard
listened on 0.0.0.0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from letitloop import durable, step
from letitloop.distributed import DaskExecutor
from tests.trust.local_users import User, throwaway_user

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def square(i: int) -> int:
    return i * i


@pytest.fixture
def intruder() -> Iterator[User]:
    with throwaway_user("lildask") as user:
        yield user


def _listeners() -> list[tuple[str, int]]:
    """(ip, port) of every listening TCP socket of this process and its children."""
    me = psutil.Process()
    found = []
    for proc in [me, *me.children(recursive=True)]:
        try:
            conns = proc.net_connections("inet")
        except psutil.NoSuchProcess:
            continue
        found += [(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
    return found


def _page(ip: str, port: int, path: str) -> int | str:
    """The HTTP status a GET of ``path`` gets from (ip, port), or why there was none."""
    try:
        with urllib.request.urlopen(f"http://{ip}:{port}{path}", timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError as exc:
        return type(exc).__name__


def _addresses(executor: DaskExecutor) -> list[str]:
    """The scheduler's, every worker's and every nanny's address: what a local user can find
    with ``ss -tln`` and a few tries."""
    info = executor.client.scheduler_info()
    found = [executor.client.scheduler.address]
    for address, worker in info["workers"].items():
        found += [address, worker["nanny"]]
    return found


@pytest.mark.timeout(300)
def test_another_user_cannot_run_code_on_the_cluster_and_the_workflow_works(
    journal_path: Path, tmp_path: Path, intruder: User
) -> None:
    private = tmp_path / "root-only"
    private.mkdir(mode=0o700)
    target = private / "intruder-was-here"
    executor = DaskExecutor()

    @durable(journal=str(journal_path))
    def fan(n: int) -> list[int]:
        return step.map("square", square, range(n), on=executor)  # type: ignore[arg-type]

    try:
        assert fan(8) == [i * i for i in range(8)]
        addresses = _addresses(executor)
        assert len(addresses) == 5, addresses
        done = subprocess.run(
            [
                sys.executable,
                str(HERE / "dask_intruder.py"),
                str(intruder.uid),
                str(intruder.gid),
                str(target),
                *addresses,
            ],
            capture_output=True,
            text=True,
            timeout=200,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        tries: list[dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])
        assert len(tries) == 5 * 3 * 2, tries
        ran = [t for t in tries if not t["outcome"].startswith("refused")]
        assert not ran, f"the other user ran code on the cluster: {ran}"
        assert not target.exists(), target.read_text()
        assert all(a.startswith("tls://127.0.0.1:") for a in addresses), addresses
        # the cluster is unharmed: the same executor runs another map
        assert fan(12)[-1] == 121
    finally:
        executor.close()


@pytest.mark.timeout(180)
def test_no_dashboard_unless_asked_for_and_then_on_loopback(journal_path: Path) -> None:
    """Without ``dashboard=True`` nothing of the cluster serves a page (Dask's HTTP server
    still listens: it answers 404 to everything) and ``dashboard_link`` is None; with it, the
    dashboard answers on 127.0.0.1 and nothing of the cluster listens beyond loopback."""
    before = set(_listeners())
    for asked in (False, True):
        with DaskExecutor(dashboard=asked) as executor:
            assert executor.client.submit(square, 3, pure=False).result(timeout=60) == 9
            ours = [lp for lp in _listeners() if lp not in before]
            assert ours, "the cluster listens somewhere"
            wide = [lp for lp in ours if lp[0] != "127.0.0.1"]
            assert not wide, f"listening beyond loopback: {wide}"
            pages = {lp: _page(*lp, "/status") for lp in ours}
            served = [lp for lp, status in pages.items() if status == 200]
            if asked:
                link = executor.dashboard_link
                assert link is not None and link.startswith("http://127.0.0.1:"), link
                assert _page("127.0.0.1", int(link.split(":")[2].split("/")[0]), "/status") == 200
            else:
                assert executor.dashboard_link is None
                assert not served, pages
                info = {lp: _page(*lp, "/info/main/workers.html") for lp in ours}
                assert 200 not in info.values(), info
