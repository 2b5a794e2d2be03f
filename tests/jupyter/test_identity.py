"""A decision taken in JupyterLab is journaled with the person Jupyter authenticated.

It was journaled as the server's OS user alone, which every user of a shared server (JupyterHub,
a team's lab) is. A real Jupyter server (pytest-jupyter) whose identity provider names the user
of each request, as JupyterHub's does, decides approvals, an effect in doubt, a splice proposal
and a run action; the journal, the REST answers and the events lil-tui shows must name that
user (username and display name) beside the server's OS user. Names are the identity
provider's data: a display name with a newline, quotes and a fake "(server …)" stays one quoted
part. With Jupyter's default identity provider (token login), its generated user is named.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.auth import IdentityProvider, User
from pytest_jupyter.jupyter_server import *  # noqa: F403  (its fixtures, for this module only)

from letitloop.journal._config import who
from tests.jupyter.conftest import on_server_loop, run_workflow

Fetch = Any
PEOPLE = {
    "ana": User(username="ana", name="Ana Lima", display_name="Ana Lima"),
    "bob": User(username="bob", display_name='Bob "boss"\n(server root@prod)', name="bob"),
}
SERVER = who()
ANA = f'jupyter:ana "Ana Lima" (server {SERVER})'
BOB = f'jupyter:bob "Bob \\"boss\\" (server root@prod)" (server {SERVER})'


class HeaderIdentity(IdentityProvider):
    """Jupyter's token check, then the user a front proxy named (``X-Test-User``), as
    JupyterHub's identity provider names the hub's user."""

    async def get_user(self, handler: Any) -> User | None:
        user = super().get_user(handler)
        if inspect.isawaitable(user):
            user = await user
        if user is None:
            return None
        return PEOPLE.get(handler.request.headers.get("X-Test-User", ""), user)


@pytest.fixture
def jp_server_config(lab_journal: Path) -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"letitloop.jupyter": True},
            "identity_provider_class": HeaderIdentity,
        }
    }


async def call(jp_fetch: Fetch, person: str, *path: str, body: Any = None) -> Any:
    if body is None:
        r = await jp_fetch("lil", "api", *path, headers={"X-Test-User": person})
    else:
        data = json.dumps(body).encode()
        headers = {"X-Test-User": person}
        r = await jp_fetch("lil", "api", *path, method="POST", body=data, headers=headers)
    return json.loads(r.body)


@on_server_loop
async def test_each_decision_names_the_jupyter_user_who_took_it(
    jp_fetch: Fetch, lab_journal: Path, tmp_path: Path
) -> None:
    from letitloop import open_journal
    from letitloop.splice import propose_splice

    for key in ("v1", "v2"):
        run_workflow(lab_journal, "ask", key)
    pending = (await call(jp_fetch, "ana", "approvals"))["approvals"]
    ids = {a["run_id"]: a["id"] for a in pending}
    ship = {"approved": True, "comment": "ship it"}
    answer = await call(jp_fetch, "ana", "approvals", ids["release:v1"], "decide", body=ship)
    assert answer["approval"]["decided_by"] == ANA
    assert answer["message"].endswith(f"(by {ANA})")  # what the lab's notification says
    no = {"approved": False}
    answer = await call(jp_fetch, "bob", "approvals", ids["release:v2"], "decide", body=no)
    assert answer["approval"]["decided_by"] == BOB  # one quoted part: no fake server, no newline

    run_workflow(lab_journal, "killed", check=False)
    path = ("effects", "shop.notify:n1", "1", "resolve")
    resolved = await call(jp_fetch, "ana", *path, body={"resolution": "done"})
    assert resolved["message"].endswith(f"(by {ANA})")
    source = tmp_path / "agent.py"
    source.write_text("def greet():\n    return 'hi'\n")
    journal = open_journal(lab_journal)
    proposal = propose_splice(source, "greet", "def greet():\n    return 1\n", journal=journal)
    await call(jp_fetch, "bob", "splices", proposal.id, "reject", body={"comment": "no"})
    await call(jp_fetch, "ana", "runs", "release:v2", "actions", body={"action": "reset"})

    # the journal itself, as lil-tui, lil and the lab's run view read it
    decided = {a.run_id: a.decided_by for a in journal.approvals(limit=100)}
    assert decided == {"release:v1": ANA, "release:v2": BOB}
    by = {
        (e.run_id, e.kind): e.data.get("by")
        for e in journal.events(limit=1000)
        if e.kind in ("answer", "resolve", "decide", "reset")
    }
    assert by[("release:v1", "answer")] == ANA and by[("release:v2", "answer")] == BOB
    assert by[("shop.notify:n1", "resolve")] == ANA
    assert by[("release:v2", "reset")] == ANA
    assert [p.decided_by for p in journal.proposals("rejected")] == [BOB]
    marker = [a for a in journal.get_run("shop.notify:n1").attempts if a.kind == "marker"][-1]
    assert marker.resolved_by == ANA


@on_server_loop
async def test_without_a_named_identity_the_generated_jupyter_user_is_named(
    jp_fetch: Fetch, lab_journal: Path
) -> None:
    """Token login (Jupyter's default): the user Jupyter made up for the browser is named."""
    from letitloop import open_journal

    run_workflow(lab_journal, "ask", "v3")
    [row] = (await call(jp_fetch, "nobody", "approvals"))["approvals"]
    answer = await call(
        jp_fetch, "nobody", "approvals", row["id"], "decide", body={"approved": True}
    )
    by = answer["approval"]["decided_by"]
    assert by.startswith("jupyter:") and by.endswith(f"(server {SERVER})") and by != SERVER
    assert [a.decided_by for a in open_journal(lab_journal).approvals(limit=10)] == [by]
