"""``lil mcp`` as a surface: the real server over stdio, driven by the mcp SDK's own client.

An agent's answers are operate's JSON with every text cut at the server's bound and long lists
paged (``letitloop.mcp._service.shrink`` and cursors), so the truth is adapted the same way
before it is compared; ``show_run`` adds who intervened and how a person decides, which are
taken off (and checked) before the comparison.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.matrix.build import Scenario
from tests.matrix.reading import Reading

CLIENT = types.Implementation(name="lil-matrix", version="1.0")
BY = "mcp:lil-matrix/1.0"
SHOW_EXTRAS: tuple[str, ...] = ("attempts_total", "next_cursor", "decisions")
SHOW_EXTRAS += ("approvals_decided_by", "effects_decided_by")


@asynccontextmanager
async def session(s: Scenario) -> AsyncIterator[ClientSession]:
    """The SDK's client connected to ``lil mcp`` started in the project over stdio."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "letitloop", "mcp"], cwd=s.project, env=s.env
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=CLIENT) as client,
    ):
        await client.initialize()
        yield client


async def call(client: ClientSession, name: str, args: dict[str, Any] | None = None) -> Any:
    """A tool's structured answer; an error answer fails with its text."""
    result = await client.call_tool(name, args or {})
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, f"{name}: {text}"
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def refused(client: ClientSession, name: str, args: dict[str, Any]) -> str:
    """A tool's error answer, as the agent reads it."""
    result = await client.call_tool(name, args)
    assert result.is_error, (name, result.structured_content)
    return str(result.content[0].text)  # type: ignore[union-attr]


async def pages(client: ClientSession, name: str, key: str, **args: Any) -> list[Any]:
    """Every item of a paged listing, following ``next_cursor``."""
    items: list[Any] = []
    cursor = None
    while True:
        answer = await call(client, name, args | ({"cursor": cursor} if cursor else {}))
        items += answer[key]
        cursor = answer.get("next_cursor")
        if not cursor:
            return items


async def show(client: ClientSession, run_id: str) -> dict[str, Any]:
    """``show_run`` in operate's view shape (its extras checked, then taken off)."""
    view = await call(client, "show_run", {"run": run_id, "attempts_limit": 200})
    assert view["next_cursor"] is None and view["attempts_total"] == len(view["attempts"])
    assert ("effects_decided_by" in view) == bool(view["effects"])
    return {k: v for k, v in view.items() if k not in SHOW_EXTRAS}


async def read(client: ClientSession, truth_ids: list[str]) -> Reading:
    return Reading(
        runs=await pages(client, "list_runs", "runs", limit=100),
        views={run_id: await show(client, run_id) for run_id in truth_ids},
        doubts=await pages(client, "effects_in_doubt", "effects", limit=100),
        approvals=await pages(client, "approvals", "approvals", limit=100),
        proposals=await pages(client, "splice_proposals", "proposals", limit=50),
        notices=await pages(client, "notifications", "notifications", limit=100),
        tasks=await pages(client, "list_runs", "runs", workflow="lil.task", limit=100),
    )


def adapt(value: Any) -> Any:
    """The truth as ``lil mcp`` is documented to write it: a run's result preview cut at
    ``RESULT_PREVIEW``, every text at ``MAX_TEXT``, every list inside a record at ``MAX_ITEMS``
    (proposals' texts at 4000)."""
    from letitloop import operate
    from letitloop.mcp._reads import RESULT_PREVIEW
    from letitloop.mcp._service import shrink

    if isinstance(value, dict) and "attempts" in value and "steps" in value:  # a run in full
        result = value["result"]
        if result is not None:
            result = result | {"preview": operate.truncate(result["preview"], RESULT_PREVIEW)}
        return shrink(value | {"result": result})
    if isinstance(value, list) and value and "diff" in value[0]:  # proposals
        return [shrink(p, 4000) for p in value]
    if isinstance(value, list):
        return [adapt(v) for v in value]
    return shrink(value)


async def acts(s: Scenario, client: ClientSession) -> dict[str, str]:
    """Every action an agent may take (a person approves ``e-mcp`` first, with ``lil``), each
    journaled with the client's name; a person's decisions are no tool at all."""
    from letitloop.mcp._options import PERSON_ONLY
    from tests.matrix.acts import (
        BUDGET_USD,
        CANCELLED,
        COMPLETED,
        Targets,
        expect,
        normal,
        refusal,
        said_error,
        wait_status,
    )

    t, j = Targets("mcp"), s.journal
    listed = {tool.name for tool in (await client.list_tools()).tools}
    assert not listed & set(PERSON_ONLY), listed & set(PERSON_ONLY)
    s.lil("approvals", "approve", t.approval(j, t.approve), "--by", "person:for-mcp")
    said: dict[str, Any] = {}
    resumed = await call(client, "resume_run", {"run": t.approve})
    assert resumed["by"] == BY and resumed["pid"] > 0, resumed
    wait_status(j, t.approve, "completed")
    said["cancel"] = await call(client, "cancel_run", {"run": t.reject, "reason": "matrix says no"})
    said["retry"] = await call(client, "retry_run", {"run": t.dead})
    said["budget"] = await call(client, "raise_budget", {"run": t.dead, "usd": BUDGET_USD})
    said["fork"] = await call(
        client, "fork_run", {"run": COMPLETED, "from_step": "sum", "key": "mcp"}
    )
    for answer in said.values():
        assert answer["by"] == BY, answer
    refused_text = await refused(client, "resume_run", {"run": CANCELLED})
    assert said_error(refused_text) == refusal(j)
    expect(s, "mcp", BY, {"resume", "cancel", "retry", "budget", "fork"})
    texts = {a: str(answer["message"]) for a, answer in said.items()}
    texts["refused resume"] = refused_text
    return {a: normal(s, text, "mcp", BY) for a, text in texts.items()}
