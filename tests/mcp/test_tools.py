"""Every tool of ``lil mcp``, driven by the mcp SDK's own client over stdio and over Streamable
HTTP, on a scripted journal on DuckDB and on PostgreSQL: the answers are the other surfaces'
(``lil ... --json`` reads the same runs, statuses, steps, errors with fixes, markers in doubt,
approvals, proposals), and every action is journaled with the client's name and shown as such
by ``lil runs show`` and ``lil splice list``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import ClientSession

from tests.mcp.mcp_helpers import (
    ALL_ACTS,
    BY,
    call,
    call as call_tool,
    http_server,
    http_session,
    lil,
    lil_json,
    make_receipt,
    refused,
    stdio_session,
    until,
)

READS = {
    "list_runs",
    "show_run",
    "step_output",
    "effects_in_doubt",
    "approvals",
    "splice_proposals",
    "notifications",
    "rate_limits",
    "journal_sql",
    "report",
    "queues",
}
PERSON_ONLY = {"approve", "reject", "resolve_effect", "apply_splice", "decide_approval"}


HTTP_CLIENT = types.Implementation(name="lil-tests-http", version="2.0")
HTTP_BY = "mcp:lil-tests-http/2.0"


def _no_traceback(run: dict[str, Any]) -> dict[str, Any]:
    """A run's JSON without its traceback (an answer cuts long texts; the CLI prints them)."""
    error = dict(run["error"] or {})
    error.pop("traceback", None)
    return run | {"error": error or None}


async def test_every_tool_on_a_scripted_journal(scripted: Path) -> None:
    """Two clients at once, one over stdio and one over Streamable HTTP: every read tool answers
    each the same (and as the CLI does), every act tool works from one of them and is shown
    with that client's name."""
    project = scripted
    make_receipt(project)
    with http_server(project) as (url, token, _):
        async with (
            stdio_session(project) as s,
            http_session(url, token, client=HTTP_CLIENT) as h,
        ):
            for session in (s, h):
                listed = {t.name for t in (await session.list_tools()).tools}
                assert listed == READS | set(ALL_ACTS)
                assert not listed & PERSON_ONLY
            answers = await _reads(s, project)
            for name, args, answer in answers:  # the same answers over HTTP
                assert await call(h, name, args) == answer, name
            await _acts(s, h, project)


async def _reads(s: ClientSession, project: Path) -> list[tuple[str, dict[str, Any], Any]]:
    """Every read tool over ``s``, checked against the scenario and the CLI; the calls made and
    their answers, to ask again over another transport."""
    answers: list[tuple[str, dict[str, Any], Any]] = []

    async def call(s: ClientSession, name: str, args: dict[str, Any] | None = None) -> Any:
        answer = await call_tool(s, name, args)
        answers.append((name, args or {}, answer))
        return answer

    cli = True
    runs = (await call(s, "list_runs", {"limit": 100}))["runs"]
    by_id = {r["run_id"]: r for r in runs}
    if cli:
        shown = lil_json(project, "runs", "list", "--limit", "100")
        assert [_no_traceback(r) for r in runs] == [_no_traceback(r) for r in shown]
    assert by_id["flows.ok:a"]["status"] == "completed"
    assert by_id["flows.ok:a"]["steps_done"] == by_id["flows.ok:a"]["steps_total"] == 2
    broken = by_id["flows.broken:b"]
    assert broken["status"] == "failed"
    assert broken["error"]["fix"] == "put data.csv in the project"  # the error with its fix
    assert by_id["flows.effect:c"]["status"] == "interrupted"  # its process was SIGKILLed
    assert by_id["flows.asks:e"]["status"] == "suspended" and by_id["flows.asks:e"]["waiting"] == 1
    assert by_id["flows.dead:f"]["dead_letter"] and "retry" in by_id["flows.dead:f"]["actions"]
    [fork] = [r for r in runs if r["workflow"] == "flows.ok" and r["run_id"] != "flows.ok:a"]
    origin = (await call(s, "show_run", {"run": fork["run_id"]}))["run"]["forked_from"]
    assert (origin["run_id"], origin["step"]) == ("flows.ok:a", "sum")

    failed = (await call(s, "list_runs", {"status": "failed"}))["runs"]
    assert {r["run_id"] for r in failed} == {"flows.broken:b", "flows.dead:f"}
    assert [r["run_id"] for r in (await call(s, "list_runs", {"text": "slow"}))["runs"]] == [
        "flows.slow:d"
    ]
    assert len((await call(s, "list_runs", {"since": "1h", "limit": 100}))["runs"]) == len(runs)
    assert (await call(s, "list_runs", {"since": "2999-01-01"}))["runs"] == []

    detail = await call(s, "show_run", {"run": "flows.broken:b"})
    parse = [a for a in detail["attempts"] if a["name"] == "parse"]
    assert parse and parse[-1]["error"]["fix"] == "put data.csv in the project"
    if cli:
        shown = lil_json(project, "runs", "show", "flows.broken:b")
        assert _no_traceback(detail["run"]) == _no_traceback(shown["run"])
        assert detail["steps"] == shown["steps"]
        assert [a["name"] for a in detail["attempts"]] == [a["name"] for a in shown["attempts"]]
    killed = await call(s, "show_run", {"run": "flows.effect:c"})
    [send] = [a for a in killed["attempts"] if a["name"] == "send_email"]
    assert send["status"] == "started" and send["seconds"] is None  # killed: never "running"
    assert killed["effects"] and "lil effects resolve" in killed["effects_decided_by"]

    out = await call(s, "step_output", {"run": "flows.ok:a", "position": 0, "length": 1000})
    assert out["name"] == "fetch" and len(out["text"]) == 1000 and out["next_offset"] == 1000
    assert out["total_chars"] > 30_000

    effects = await call(s, "effects_in_doubt", {})
    assert [(e["run_id"], e["marker"]) for e in effects["effects"]] == [
        ("flows.effect:c", "send_email")
    ]
    assert "lil effects resolve" in effects["decided_by"]
    approvals = await call(s, "approvals", {})
    assert [(a["run_id"], a["name"]) for a in approvals["approvals"]] == [("flows.asks:e", "send")]
    assert "lil approvals approve" in approvals["decided_by"]
    fleet = await call(s, "queues", {})
    assert (fleet["queues"], fleet["workers"], fleet["truncated"]) == ([], [], {})
    orphans = {o["run_id"]: o["command"] for o in fleet["orphans"]}  # killed, not recoverable
    assert orphans == {r: f"lil runs resume {r}" for r in ("flows.effect:c", "flows.slow:d")}
    if cli:
        listed = lil_json(project, "queue", "list")
        assert listed == {k: v for k, v in fleet.items() if k != "truncated"}
    proposals = await call(s, "splice_proposals", {"state": "pending"})
    assert [(p["target"], p["by"]) for p in proposals["proposals"]] == [("greet", "scenario")]
    assert "Hi, {name}" in proposals["proposals"][0]["diff"]
    assert "lil splice apply" in proposals["decided_by"]
    notices = (await call(s, "notifications", {"limit": 100}))["notifications"]
    assert {n["event"] for n in notices} >= {"run_failed", "approval_waiting"}
    limits = (await call(s, "rate_limits"))["limits"]
    assert [b["name"] for b in limits] == ["llm"]
    sql = await call(s, "journal_sql", {"query": "SELECT count(*) AS n FROM runs"})
    assert sql["columns"] == ["n"] and sql["rows"] == [[len(runs)]]
    report = await call(s, "report", {})
    assert report["runs"] == len(runs) and report["failed_runs"] == 2
    if cli:
        assert [e["marker"] for e in lil_json(project, "effects", "list")] == ["send_email"]
        assert [a["id"] for a in lil_json(project, "approvals", "list")] == [
            a["id"] for a in approvals["approvals"]
        ]
        assert {n["key"] for n in lil_json(project, "notify", "list", "--limit", "100")} == {
            n["key"] for n in notices
        }
        assert [b["name"] for b in lil_json(project, "limits")] == ["llm"]
        mine = lil_json(project, "report")
        assert (mine["runs"], mine["failed_runs"], mine["attempts"]) == (
            report["runs"],
            report["failed_runs"],
            report["attempts"],
        )
    return [a for a in answers if a[0] not in ("notifications", "report", "rate_limits")]


async def _acts(s: ClientSession, h: ClientSession, project: Path) -> None:
    """Each act tool once (over HTTP: cancel, retry, fork, propose; over stdio: resume, start a
    task, verify a receipt), each shown with its client's name by the other surfaces."""
    done = await call(h, "cancel_run", {"run": "flows.broken:b", "reason": "wrong input"})
    assert done["action"] == "cancel" and done["by"] == HTTP_BY
    shown = lil(project, "runs", "show", "flows.broken:b").stdout
    assert f"cancelled by {HTTP_BY}: wrong input" in shown

    await call(h, "retry_run", {"run": "flows.dead:f"})
    attempts = lil_json(project, "runs", "show", "flows.dead:f")["attempts"]
    assert any(a["resolution"] == "rearm" and a["resolved_by"] == HTTP_BY for a in attempts)

    forked = await call(h, "fork_run", {"run": "flows.ok:a", "from_step": "sum", "key": "again"})
    shown = lil(project, "runs", "show", forked["fork"]).stdout
    assert f"forked from flows.ok:a at position 1 by {HTTP_BY}" in shown

    code = 'def greet(name):\n    return f"Hey, {name}"\n'
    proposed = await call(h, "propose_splice", {"path": "app.py", "target": "greet", "code": code})
    listed = lil_json(project, "splice", "list", "--state", "pending")
    assert {p["id"]: p["by"] for p in listed}[proposed["proposal_id"]] == HTTP_BY

    async def status(run: str) -> str:
        return str((await call(s, "show_run", {"run": run}))["run"]["status"])

    (project / "gate").touch()  # the killed step may finish now
    resumed = await call(s, "resume_run", {"run": "flows.slow:d"})
    assert resumed["action"] == "resume" and resumed["pid"] > 0
    await until(lambda: status("flows.slow:d"), "completed", 60)
    assert (
        f"restarted by {BY}: resume started" in lil(project, "runs", "show", "flows.slow:d").stdout
    )

    started = await call(s, "start_task", {"task": "write"})
    assert started["run_id"] == "lil.task:write" and started["by"] == BY
    await until(lambda: status("lil.task:write"), "completed", 90)
    assert (project / "src" / "out.txt").read_text() == "done\n"
    assert (
        f"restarted by {BY}: task write started"
        in lil(project, "runs", "show", "lil.task:write").stdout
    )

    verdict = await call(s, "verify_receipt", {"path": "receipt.json"})
    assert verdict["ok"] is True and verdict["failed"] == []

    # a refused action says why, as every surface does
    said = await refused(s, "resume_run", {"run": "flows.ok:a"})
    assert "already completed" in said and "fix:" in said
    said = await refused(s, "cancel_run", {"run": "flows.ok:a"})
    assert "already completed" in said
