"""The roles of docs/postgres.md, created with the SQL the page shows (run as written): the owner
migrates, a worker runs workflows and decides, a viewer lists and inspects through ``lil`` and
is refused, with the fix, when it tries to decide; nothing it tried is written."""

from __future__ import annotations

import re
from collections.abc import Iterator

import psycopg
import pytest

from tests.helpers import ROOT, lil_json, run_lil
from tests.pg_cluster import with_user

DOC = (ROOT / "docs" / "postgres.md").read_text()
ROLES = ("lil_owner", "lil_worker", "lil_viewer")


def _roles_sql() -> list[str]:
    """The ``sql`` blocks of the page's Roles section, in order."""
    section = DOC.split("## Roles", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


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
        done = run_lil(
            "journal", "migrate", "--journal", urls["owner"]
        )  # as the page says: the owner migrates
        assert done.returncode == 0, done.stderr
        with psycopg.connect(urls["owner"], autocommit=True) as conn:
            conn.execute(grants.encode())  # run as lil_owner, as the page says
        yield urls
    finally:
        _drop_roles(pg_dsn)


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
    runs = lil_json("runs", "list", "--json", "--journal", viewer)
    assert [(r["run_id"], r["status"]) for r in runs] == [("roles.release:r1", "suspended")]
    shown = lil_json("runs", "show", "roles.release:r1", "--json", "--journal", viewer)
    assert [a["name"] for a in shown["attempts"]] == ["build", "ship"]
    pending = lil_json("approvals", "list", "--json", "--journal", viewer)
    assert [a["payload"] for a in pending] == [{"version": "1.2"}]

    refused = run_lil("approvals", "approve", pending[0]["id"], "--journal", viewer)
    assert refused.returncode == 1
    assert "may not do this" in refused.stderr and "read-only" in refused.stderr
    refused = run_lil("runs", "cancel", "roles.release:r1", "--journal", viewer)
    assert refused.returncode == 1 and "may not do this" in refused.stderr
    still = lil_json("approvals", "list", "--json", "--journal", viewer)
    assert [a["status"] for a in still] == ["pending"]  # nothing the viewer tried was written

    decided = run_lil(
        "approvals", "approve", pending[0]["id"], "--json", "--journal", roles["worker"]
    )
    assert decided.returncode == 0, decided.stderr
    assert release() == "shipped"
    with psycopg.connect(roles["viewer"]) as conn:  # the tables are the owner role's
        tables = conn.execute(
            "SELECT tableowner FROM pg_tables WHERE schemaname = 'letitloop'"
        ).fetchall()
    assert {t[0] for t in tables} == {"lil_owner"}
