"""The server extension's routes on a real Jupyter server (pytest-jupyter) over a real journal
owner, with workflows run in real subprocesses."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (its fixtures, for this module only)
from tornado.httpclient import HTTPClientError

from tests.helpers import wait_until_async
from tests.jupyter.conftest import on_server_loop, run_workflow, start_workflow

Fetch = Any


@pytest.fixture
def jp_server_config(lab_journal: Path) -> dict[str, Any]:
    """A real Jupyter server with the letitloop extension, on this test's journal."""
    return {"ServerApp": {"jpserver_extensions": {"letitloop.jupyter": True}}}


async def get(jp_fetch: Fetch, *path: str, **params: str) -> Any:
    r = await jp_fetch("lil", "api", *path, params=params or None)
    assert r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


async def post(jp_fetch: Fetch, *path: str, body: Any = None, raw: bytes | None = None) -> Any:
    data = raw if raw is not None else json.dumps(body or {}).encode()
    r = await jp_fetch("lil", "api", *path, method="POST", body=data)
    return json.loads(r.body)


async def refused(
    jp_fetch: Fetch, *path: str, body: Any = None, raw: bytes | None = None, **params: str
) -> Any:
    """A POST (or GET with body None and raw None) that must fail: its status and JSON error."""
    with pytest.raises(HTTPClientError) as info:
        if body is None and raw is None:
            await jp_fetch("lil", "api", *path, params=params or None)
        else:
            await post(jp_fetch, *path, body=body, raw=raw)
    response = info.value.response
    assert response is not None
    return info.value.code, json.loads(response.body)["error"]


async def wait_for(check: Any, timeout: float = 60.0) -> Any:
    """The first true answer of the coroutine function ``check``, asked every 0.1 s."""
    return await wait_until_async(check, timeout, interval=0.1)


@on_server_loop
async def test_requests_without_the_token_are_refused(
    jp_fetch: Fetch, http_server_client: Any, jp_base_url: str, lab_journal: Path
) -> None:
    assert (await get(jp_fetch, "runs"))["runs"] == []  # with the token: served
    for method, body in (("GET", None), ("POST", b'{"approved": true}')):
        url = f"{jp_base_url}lil/api/approvals/abc/decide" if body else f"{jp_base_url}lil/api/runs"
        response = await http_server_client.fetch(url, method=method, body=body, raise_error=False)
        assert response.code == 403, (method, response.code)
    wrong = {"Authorization": "token not-the-token"}
    response = await http_server_client.fetch(
        f"{jp_base_url}lil/api/runs", headers=wrong, raise_error=False
    )
    assert response.code == 403


@on_server_loop
async def test_runs_are_listed_filtered_and_searched(jp_fetch: Fetch, lab_journal: Path) -> None:
    run_workflow(lab_journal, "pipeline")
    assert run_workflow(lab_journal, "killed", check=False).returncode == -9
    runs = (await get(jp_fetch, "runs"))["runs"]
    assert {r["run_id"]: r["status"] for r in runs} == {
        "etl.pipeline:p1": "completed",
        "shop.notify:n1": "interrupted",
    }
    pipeline = next(r for r in runs if r["workflow"] == "etl.pipeline")
    assert pipeline["steps_done"] == 2 and pipeline["cost_micros"] == 300
    only = (await get(jp_fetch, "runs", status="completed"))["runs"]
    assert [r["run_id"] for r in only] == ["etl.pipeline:p1"]
    found = (await get(jp_fetch, "runs", q="NOTIFY"))["runs"]
    assert [r["run_id"] for r in found] == ["shop.notify:n1"]
    code, error = await refused(jp_fetch, "runs", status="nope")
    assert code == 400 and "unknown status" in error["message"] and error["fix"]
    code, error = await refused(jp_fetch, "runs", limit="-4")
    assert code == 400 and "limit" in error["message"]


@on_server_loop
async def test_run_detail_has_steps_attempts_previews_and_cost(
    jp_fetch: Fetch, lab_journal: Path
) -> None:
    run_workflow(lab_journal, "pipeline")
    detail = await get(jp_fetch, "runs", "p1")  # a unique suffix finds the run, as lil does
    assert detail["run"]["run_id"] == "etl.pipeline:p1"
    assert [s["name"] for s in detail["steps"]] == ["fetch", "transform"]
    fetch = detail["attempts"][0]
    assert json.loads(fetch["preview"]) == {"label": "fetch", "value": 10}
    assert fetch["cost_micros"] == 100 and fetch["status"] == "completed"
    assert json.loads(detail["result"]["preview"]) == [10, 20] and detail["effects"] == []
    assert detail["run"]["shown"]["steps"] == "2/2" and detail["run"]["actions"] == ["fork"]
    code, error = await refused(jp_fetch, "runs", "no-such-run")
    assert code == 404 and error["type"] == "JournalError"


@on_server_loop
async def test_approving_unblocks_a_waiting_script(
    jp_fetch: Fetch, lab_journal: Path, tmp_path: Path
) -> None:
    out = tmp_path / "published.json"
    proc = start_workflow(lab_journal, "publish", str(out))
    try:

        async def pending() -> list[Any]:
            return list((await get(jp_fetch, "approvals", status="pending"))["approvals"])

        [row] = await wait_for(pending)
        assert row["name"] == "publish" and row["payload"] == {"title": "Hello"}
        assert row["schema"]["required"] == ["title"]
        runs = (await get(jp_fetch, "runs"))["runs"]
        assert runs[0]["waiting"] == 1 and (await get(jp_fetch, "runs"))["waiting"] == 1
        # an edited payload that breaks the schema is refused and decides nothing
        bad = {"approved": True, "payload": {"title": 42}}
        code, error = await refused(jp_fetch, "approvals", row["id"], "decide", body=bad)
        assert code == 400 and "title" in error["message"]
        code, error = await refused(jp_fetch, "approvals", row["id"], "decide", body={"ok": 1})
        assert code == 400 and "unknown field 'ok'" in error["message"]
        assert len(await pending()) == 1 and proc.poll() is None
        good = {"approved": True, "comment": "ship it", "payload": {"title": "Edited"}}
        answer = await post(jp_fetch, "approvals", row["id"], "decide", body=good)
        assert answer["message"].startswith("approved publish of blog.publish:post-1")
        assert answer["approval"]["comment"] == "ship it"
        assert await asyncio.to_thread(proc.wait, 60) == 0
        assert json.loads(out.read_text()) == {"approved": True, "payload": {"title": "Edited"}}
        code, error = await refused(
            jp_fetch, "approvals", row["id"], "decide", body={"approved": False}
        )
        assert code == 409 and error["type"] == "ApprovalDecidedError"
    finally:
        proc.kill()
        proc.wait()


@on_server_loop
async def test_effects_in_doubt_are_listed_and_resolved(jp_fetch: Fetch, lab_journal: Path) -> None:
    run_workflow(lab_journal, "killed", check=False)
    [effect] = (await get(jp_fetch, "effects"))["effects"]
    assert effect["run_id"] == "shop.notify:n1" and effect["marker"] == "send_email"
    [same] = (await get(jp_fetch, "runs", "n1"))["effects"]
    assert same == effect  # one shape, one rule: the listing and the run view agree
    path = ("effects", "shop.notify:n1", "1", "resolve")
    code, error = await refused(jp_fetch, *path, body={"resolution": "maybe"})
    assert code == 400 and "'done' or 'redo'" in error["message"]
    answer = await post(jp_fetch, *path, body={"resolution": "done"})
    assert "as done" in answer["message"] and "skips the block" in answer["message"]
    assert (await get(jp_fetch, "effects"))["effects"] == []


@on_server_loop
async def test_splice_proposals_are_diffed_applied_and_rejected(
    jp_fetch: Fetch, lab_journal: Path, tmp_path: Path
) -> None:
    from letitloop import open_journal
    from letitloop.splice import propose_splice

    source = tmp_path / "agent.py"
    source.write_text("def greet():\n    return 'hi'\n\n\ndef other():\n    return 1\n")
    journal = open_journal(lab_journal)
    first = propose_splice(source, "greet", "def greet():\n    return 'hello'\n", journal=journal)
    second = propose_splice(source, "other", "def other():\n    return 2\n", journal=journal)
    rows = {p["id"]: p for p in (await get(jp_fetch, "splices", state="pending"))["proposals"]}
    assert set(rows) == {first.id, second.id}
    assert "-    return 'hi'\n+    return 'hello'\n" in rows[first.id]["diff"]
    answer = await post(jp_fetch, "splices", first.id, "apply")
    assert answer["message"].startswith(f"applied {first.id}")
    assert "return 'hello'" in source.read_text()
    code, error = await refused(jp_fetch, "splices", first.id, "apply", body={})
    assert code == 409 and "already applied" in error["message"], error
    await post(jp_fetch, "splices", second.id, "reject", body={"comment": "not now"})
    assert "return 1" in source.read_text()
    [rejected] = (await get(jp_fetch, "splices", state="rejected"))["proposals"]
    assert rejected["note"] == "not now"


@on_server_loop
async def test_run_actions_cancel_budget_reset_and_resume(
    jp_fetch: Fetch, lab_journal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_FAIL_STEP", "transform")
    run_workflow(lab_journal, "pipeline", check=False)
    monkeypatch.delenv("LAB_FAIL_STEP")  # the resume's process (the server's child) succeeds
    assert (await get(jp_fetch, "runs", "p1"))["run"]["status"] == "failed"
    path = ("runs", "etl.pipeline:p1", "actions")
    for body, words in (
        ({"action": "explode"}, "unknown action"),
        ({"action": "budget"}, "dollars"),
        ({"action": "budget", "dollars": -1}, "dollars"),
        ({"action": "budget", "dollars": True}, "dollars"),
    ):
        code, error = await refused(jp_fetch, *path, body=body)
        assert code == 400 and words in error["message"], (body, error)
    answer = await post(jp_fetch, *path, body={"action": "budget", "dollars": 2.5})
    assert (await get(jp_fetch, "runs", "p1"))["run"]["budget"]["usd_micros"] == 2_500_000, answer
    await post(jp_fetch, *path, body={"action": "reset"})
    assert (await get(jp_fetch, "runs", "p1"))["steps"] == []
    answer = await post(jp_fetch, *path, body={"action": "resume"})
    assert answer["message"].startswith("resuming etl.pipeline:p1")

    async def completed() -> bool:
        return bool((await get(jp_fetch, "runs", "p1"))["run"]["status"] == "completed")

    await wait_for(completed)
    assert len((await get(jp_fetch, "runs", "p1"))["steps"]) == 2  # ran again in a new process
    epoch = (await get(jp_fetch, "runs", "p1"))["run"]["epoch"]
    # a completed run: every action is refused with the cause every surface gives (lil-tui's
    # keys, operate.why_not; lil runs resume's for a resume), and nothing changes
    for action, words in (
        ("resume", "already completed: there is nothing to resume"),
        ("retry", "has no dead-lettered step to retry"),
        ("budget", "is completed: nothing to budget"),
        ("cancel", "is completed: nothing to cancel"),
        ("reset", "is completed: nothing to reset"),
    ):
        body = {"action": action} | ({"dollars": 1} if action == "budget" else {})
        code, error = await refused(jp_fetch, *path, body=body)
        assert code == 409 and words in error["message"] and error["fix"], (action, error)
    after = (await get(jp_fetch, "runs", "p1"))["run"]
    assert (after["status"], after["epoch"]) == ("completed", epoch)
    run_workflow(lab_journal, "killed", check=False)
    answer = await post(jp_fetch, "runs", "n1", "actions", body={"action": "cancel"})
    assert answer["message"].startswith("cancelled shop.notify:n1")
    assert (await get(jp_fetch, "runs", "n1"))["run"]["status"] == "cancelled"


@on_server_loop
async def test_hostile_bodies_get_a_json_error_and_change_nothing(
    jp_fetch: Fetch, lab_journal: Path
) -> None:
    run_workflow(lab_journal, "pipeline")
    path = ("runs", "etl.pipeline:p1", "actions")
    for raw, status, words in (
        (b"{not json", 400, "not JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"action": 7}', 400, "must be str"),
        (b"\xff\xfe", 400, "not JSON"),
        (b'{"action": "reset", "pad": "' + b"x" * 300_000 + b'"}', 413, "limit"),
    ):
        code, error = await refused(jp_fetch, *path, raw=raw)
        assert (code, words in error["message"]) == (status, True), (raw[:20], error)
    detail = await get(jp_fetch, "runs", "p1")
    assert detail["run"]["status"] == "completed" and len(detail["steps"]) == 2


@on_server_loop
async def test_journal_events_arrive_on_the_event_bus(
    jp_fetch: Fetch, jp_ws_fetch: Any, lab_journal: Path
) -> None:
    await get(jp_fetch, "runs")  # the first request starts the relay's one subscription
    ws = await jp_ws_fetch("api", "events", "subscribe")
    await asyncio.to_thread(run_workflow, lab_journal, "pipeline")
    kinds: list[str] = []
    deadline = time.monotonic() + 30
    while "done" not in kinds:
        message = await asyncio.wait_for(ws.read_message(), deadline - time.monotonic())
        event = json.loads(message)
        if event["schema_id"] == "https://letitloop.dev/events/journal":
            assert event["run_id"] == "etl.pipeline:p1"
            kinds.append(event["kind"])
    ws.close()
    assert kinds[0] == "run" and kinds.count("ok") == 2


@on_server_loop
async def test_cell_runs_find_the_run_a_durable_cell_makes(
    jp_fetch: Fetch, lab_journal: Path, jp_root_dir: Path
) -> None:
    from letitloop.operate._cells import path_key

    key = path_key(str(jp_root_dir / "work" / "analysis.ipynb"))
    answer = await get(jp_fetch, "cells", path="work/analysis.ipynb", name="ingest")
    assert answer["cells"]["ingest"] == {"run_id": f"cell.ingest:{key}", "status": None}
    code, error = await refused(jp_fetch, "cells", path="../../etc/passwd", name="x")
    assert code == 400 and "inside the server's root" in error["message"]
    code, error = await refused(jp_fetch, "cells", path="a.ipynb", name="not-a-name")
    assert code == 400
