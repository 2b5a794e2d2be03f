"""The roles of docs/postgres.md, created with the SQL the page shows (run as written): the owner
migrates, a worker runs workflows and decides, a viewer lists and inspects through ``lil`` and
is refused, with the fix, when it tries to decide; nothing it tried is written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import ROOT
from tests.pg_cluster import with_user

DOC = (ROOT / "docs" / "postgres.md").read_text()
ROLES = ("lil_owner", "lil_worker", "lil_viewer")


def _roles_sql() -> list[str]:
    """The ``sql`` blocks of the page's Roles section, in order."""
    section = DOC.split("## Roles", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


def _lil(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "letitloop", *args, "--journal", url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=False,
    )


def _drop_roles(admin: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        for role in ROLES:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
                conn.execute(f"DROP OWNED BY {role}")
                conn.execute(f"DROP ROLE {role}")


@pytest.fixture
def roles(pg_dsn: str) -> Iterator[dict[str, str]]:
    _drop_roles(pg_dsn)
    dbname = pg_dsn.rsplit("/", 1)[1]
    create, grants = _roles_sql()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(create.replace("DATABASE lil ", f'DATABASE "{dbname}" ').encode())
    urls = {role.removeprefix("lil_"): with_user(pg_dsn, role) for role in ROLES}
    try:
        done = _lil(urls["owner"], "journal", "migrate")  # as the page says: the owner migrates
        assert done.returncode == 0, done.stderr
        with psycopg.connect(urls["owner"], autocommit=True) as conn:
            conn.execute(grants.encode())  # run as lil_owner, as the page says
        yield urls
    finally:
        _drop_roles(pg_dsn)


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_documented_roles_work_as_documented(roles: dict[str, str]) -> None:
    from letitloop import approval, durable, step
    from letitloop.errors import Suspended

    @durable(journal=roles["worker"], name="roles.release", run_id="r1")
    def release() -> str:
        step("build", lambda: "built")
        d = approval("ship", {"version": "1.2"}, wait=False)
        return "shipped" if d.approved else "held"

    with pytest.raises(Suspended):
        release()

    viewer = roles["viewer"]
    runs = _json(_lil(viewer, "runs", "list", "--json"))
    assert [(r["run_id"], r["status"]) for r in runs] == [("roles.release:r1", "suspended")]
    shown = _json(_lil(viewer, "runs", "show", "roles.release:r1", "--json"))
    assert [a["name"] for a in shown["attempts"]] == ["build", "ship"]
    pending = _json(_lil(viewer, "approvals", "list", "--json"))
    assert [a["payload"] for a in pending] == [{"version": "1.2"}]

    refused = _lil(viewer, "approvals", "approve", pending[0]["id"])
    assert refused.returncode == 1
    assert "may not do this" in refused.stderr and "read-only" in refused.stderr
    refused = _lil(viewer, "runs", "cancel", "roles.release:r1")
    assert refused.returncode == 1 and "may not do this" in refused.stderr
    still = _json(_lil(viewer, "approvals", "list", "--json"))
    assert [a["status"] for a in still] == ["pending"]  # nothing the viewer tried was written

    decided = _lil(roles["worker"], "approvals", "approve", pending[0]["id"], "--json")
    assert decided.returncode == 0, decided.stderr
    assert release() == "shipped"
    with psycopg.connect(roles["viewer"]) as conn:  # the tables are the owner role's
        tables = conn.execute(
            "SELECT tableowner FROM pg_tables WHERE schemaname = 'letitloop'"
        ).fetchall()
    assert {t[0] for t in tables} == {"lil_owner"}
