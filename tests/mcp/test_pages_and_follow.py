"""An agent's context is small: pages are small by default, a cursor reads on, no answer is over
the cap. A client following ``lil://runs/{id}`` is told of each change within a second, on
DuckDB (the owner's push) and on PostgreSQL (LISTEN/NOTIFY)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.mcp.mcp_helpers import (
    NOTICES,
    ROOT,
    call,
    env_for,
    make_project,
    refused,
    stdio_session,
)
from tests.postgres.surface_workflows import RUN_ID

MAX_RESULT = 40_000  # Limits.max_result
STEPS = 4


async def test_pages_cursors_and_caps(duck_project: Path) -> None:
    project = duck_project
    async with stdio_session(project) as s:
        first = await call(s, "list_runs")
        assert len(first["runs"]) == 7 and first["next_cursor"] is None  # the default page: 10
        seen, cursor = [], None
        while True:
            got = await call(s, "list_runs", {"limit": 2} | ({"cursor": cursor} if cursor else {}))
            assert len(got["runs"]) <= 2
            seen += [r["run_id"] for r in got["runs"]]
            cursor = got["next_cursor"]
            if cursor is None:
                break
        assert seen == [r["run_id"] for r in first["runs"]]  # every run once, in order

        text, offset = "", 0
        while offset is not None:
            page = await call(
                s, "step_output", {"run": "flows.ok:a", "position": 0, "offset": offset}
            )
            assert len(page["text"]) <= 2000  # the default page
            text += page["text"]
            offset = page["next_offset"]
        assert json.loads(text)["text"] == "x" * 30_000  # the whole output, page by page

        one = await call(s, "show_run", {"run": "flows.ok:a", "attempts_limit": 1})
        two = await call(s, "show_run", {"run": "flows.ok:a", "cursor": one["next_cursor"]})
        assert [a["name"] for a in one["attempts"] + two["attempts"]] == ["fetch", "sum"]

        # an answer that would be huge is cut to the cap, and says so
        query = "SELECT repeat('y', 100000) AS big, run_id FROM runs"
        big = await s.call_tool("journal_sql", {"query": query, "limit": 500})
        text = big.content[0].text  # type: ignore[union-attr]
        assert len(text) <= MAX_RESULT
        rows = json.loads(text)["rows"]
        assert rows and len(rows[0][0]) < 1000 and "more characters" in rows[0][0]

        said = await refused(s, "list_runs", {"cursor": "not-a-cursor"})
        assert "cursor" in said and "next_cursor" in said


async def _follow(project: Path, gates: Path) -> list[float]:
    """Subscribe to the gated run another process writes; the latency of each notification."""
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests/postgres/surface_workflows.py"),
            (project / ".journal").read_text(),
            str(gates),
            str(STEPS),
        ],
        cwd=ROOT,
        env=env_for(project),
    )
    latencies = []
    try:
        async with stdio_session(project) as s:
            deadline = time.monotonic() + 60
            while True:
                found = await s.call_tool("list_runs", {"text": "surface.gated"})
                if not found.is_error and found.structured_content["runs"]:  # type: ignore[index]
                    break
                assert time.monotonic() < deadline, found
                await anyio.sleep(0.1)
            uri = "lil://runs/" + RUN_ID.replace(":", "%3A")
            await s.subscribe_resource(uri)
            for i in range(STEPS):
                await anyio.sleep(0.3)
                NOTICES.clear()
                started = time.monotonic()
                (gates / f"go.{i}").touch()
                with anyio.fail_after(10):
                    while uri not in NOTICES:
                        await anyio.sleep(0.005)
                latencies.append(time.monotonic() - started)
            read = await s.read_resource(uri)
            shown = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert shown["run"]["run_id"] == RUN_ID
            await s.unsubscribe_resource(uri)
    finally:
        for i in range(STEPS):
            (gates / f"go.{i}").touch()
        assert proc.wait(60) == 0
    return latencies


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")  # handshake era
async def test_a_subscriber_is_told_of_each_change_within_a_second(
    backend: str, tmp_path: Path
) -> None:
    project = make_project(tmp_path / "project", backend)
    gates = tmp_path / "gates"
    gates.mkdir()
    latencies = await _follow(project, gates)
    # each latency: the gate seen (5 ms polls), the step journaled, the push, the notification
    assert statistics.median(latencies) < 1.0, latencies
    assert max(latencies) < 3.0, latencies


async def test_a_2026_client_listens_and_acts_under_its_name(tmp_path: Path) -> None:
    """The 2026-07-28 protocol (no handshake; ``subscriptions/listen``): the SDK's ``Client``
    follows the run on a listen stream, and its action carries the name from its envelope."""
    from mcp import Client, StdioServerParameters

    path = tmp_path / "project" / ".letitloop" / "journal.duckdb"
    project = make_project(tmp_path / "project", str(path), ["cancel_run"])
    gates = tmp_path / "gates"
    gates.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/postgres/surface_workflows.py"), str(path)]
        + [str(gates), str(STEPS)],
        cwd=ROOT,
        env=env_for(project),
        stderr=subprocess.DEVNULL,  # it ends cancelled, by the test's client
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "letitloop", "mcp"], cwd=project, env=env_for(project)
    )
    from tests.mcp.mcp_helpers import CLIENT

    uri = "lil://runs/" + RUN_ID.replace(":", "%3A")
    try:
        async with Client(params, client_info=CLIENT) as client:
            deadline = time.monotonic() + 60
            while True:
                found = await client.call_tool("list_runs", {"text": "surface.gated"})
                if not found.is_error and found.structured_content["runs"]:  # type: ignore[index]
                    break
                assert time.monotonic() < deadline, found
                await anyio.sleep(0.1)
            async with client.listen(resource_subscriptions=[uri]) as sub:
                started = time.monotonic()
                (gates / "go.0").touch()
                with anyio.fail_after(10):
                    event = await sub.__anext__()
                assert getattr(event, "uri", None) == uri
                assert time.monotonic() - started < 3.0
            done = await client.call_tool("cancel_run", {"run": RUN_ID})
            assert not done.is_error, done
            assert done.structured_content["by"] == "mcp:lil-tests/1.0"  # type: ignore[index]
    finally:
        for i in range(STEPS):
            (gates / f"go.{i}").touch()
        proc.wait(60)
        from tests.conftest import _kill_owner

        _kill_owner(path)
