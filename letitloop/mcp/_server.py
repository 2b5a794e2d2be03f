"""The one translation module: MCP requests in, the read and act tools out, errors as answers.

A tool call is looked up (an unknown tool, an act tool the user did not allow, or a person's
decision each get an answer saying why and what to do), its arguments checked against the
tool's schema, then run in a worker thread (a journal call may wait for an owner to start)
under a deadline, and its answer capped. A ``LetItLoopError`` becomes a tool result with
``isError`` and its fix, for the agent to read; nothing an agent sends stops the server. Runs
are also resources, ``lil://runs/{id}``, that a client may read and follow (``_follow``).
"""

from __future__ import annotations

import logging
import re
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from letitloop._version import __version__
from letitloop.errors import ConfigError, JournalError, LetItLoopError
from letitloop.mcp._acts import ACTS
from letitloop.mcp._follow import PREFIX, Follow, run_of, run_uri
from letitloop.mcp._options import PERSON_ONLY, person_only_refusal
from letitloop.mcp._reads import READS
from letitloop.mcp._service import Service, dumps, fit, offset_of, shrink
from letitloop.mcp._tools import ACT_SPECS, READ_TOOLS, TOOLS, ToolSpec, check

log = logging.getLogger("letitloop.mcp")
INSTRUCTIONS = (
    "letitloop's journal of durable runs: list_runs and show_run first; errors carry their fix. "
    "A person approves, rejects, resolves side effects and applies splices; you may read them "
    "and, where the user allowed it, resume, retry, cancel, fork, propose, start tasks."
)
UNSAFE = re.compile(r"[^A-Za-z0-9._+@-]")


def client_name(ctx: Any) -> str:
    """``mcp:NAME/VERSION`` of the client, from its ``initialize`` (or the request's envelope):
    the ``by`` every action it takes is journaled with."""
    info: Any = getattr(ctx.session.client_params, "client_info", None)
    if info is None:
        meta = (ctx.params or {}).get("_meta") or {}
        info = meta.get(types.CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    name = getattr(info, "name", None) or (info.get("name") if isinstance(info, dict) else None)
    version = getattr(info, "version", None) or (
        info.get("version") if isinstance(info, dict) else None
    )
    name = UNSAFE.sub("_", str(name or "unknown"))[:64]
    version = UNSAFE.sub("_", str(version or ""))[:32]
    return f"mcp:{name}/{version}" if version else f"mcp:{name}"


def connection_key(ctx: Any) -> str:
    """Which client a request comes from: its HTTP session, or the one stdio peer."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    return f"http:{session[:100]}" if session else "stdio"


def offered(svc: Service) -> list[ToolSpec]:
    """The tools this server lists: every read tool, and the act tools the user allowed."""
    return [*READ_TOOLS, *(t for t in ACT_SPECS if t.name in svc.settings.allow)]


def lookup(svc: Service, name: str) -> ToolSpec:
    spec = TOOLS.get(name)
    if spec is not None and (not spec.act or name in svc.settings.allow):
        return spec
    if spec is not None:
        raise svc.settings.refusal(name)
    lowered = name.lower()
    if lowered in PERSON_ONLY or any(w in lowered for w in ("approve", "resolve", "apply")):
        raise person_only_refusal(lowered if lowered in PERSON_ONLY else "")
    raise ConfigError(
        f"unknown tool {name[:80]!r}",
        fix="the tools: " + ", ".join(t.name for t in offered(svc)),
    )


def error_result(exc: LetItLoopError) -> types.CallToolResult:
    """A refused or failed call, as the agent reads it: the error and its fix."""
    text = f"error: {exc.message}" + (f"\n  fix: {exc.fix}" if exc.fix else "")
    data = {"error": {"type": type(exc).__name__, "message": exc.message, "fix": exc.fix}}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text[:4000])],
        structured_content=shrink(data),
        is_error=True,
    )


def ok_result(data: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=dumps(data))], structured_content=data
    )


async def in_thread(svc: Service, limiter: anyio.CapacityLimiter, fn: Any) -> Any:
    """``fn()`` in a worker thread under the call deadline (a late journal answers an error)."""
    seconds = svc.limits.call_seconds
    try:
        with anyio.fail_after(seconds):
            return await anyio.to_thread.run_sync(fn, limiter=limiter, abandon_on_cancel=True)
    except TimeoutError:
        raise JournalError(
            f"the journal did not answer within {seconds:g} s",
            fix="check the journal (`lil journal doctor`), then ask again",
        ) from None


def build(svc: Service, follow: Follow) -> Server[Any]:
    """The MCP server of ``svc``'s journal: tools, run resources and their subscriptions."""
    limiter = anyio.CapacityLimiter(svc.limits.workers)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.schema,
                    annotations=types.ToolAnnotations(
                        read_only_hint=not t.act, destructive_hint=t.name == "cancel_run"
                    ),
                )
                for t in offered(svc)
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            spec = lookup(svc, params.name)
            args = check(spec, params.arguments)
            if spec.act:
                fn = partial(ACTS[spec.name], svc, args, client_name(ctx))
                data, key = await in_thread(svc, limiter, fn), None
            else:
                read, key = READS[spec.name]
                data = await in_thread(svc, limiter, partial(read, svc, args))
            offset = offset_of(args.get("cursor")) if "cursor" in args else 0
            return ok_result(fit(data, key, offset, svc.limits.max_result))
        except LetItLoopError as exc:
            return error_result(exc)
        except Exception as exc:  # a bug must answer this call, never stop the server
            log.exception("lil mcp: tool %s failed", params.name[:80])
            return error_result(JournalError(f"{type(exc).__name__}: {str(exc)[:500]}"))

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            name="run",
            uri_template=PREFIX + "{run_id}",
            description="One run in full (as show_run), JSON; subscribe to be told when it "
            "changes.",
            mime_type="application/json",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        from letitloop import operate

        rows = await in_thread(svc, limiter, lambda: operate.list_summaries(svc.journal, limit=20))
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    name=r.run_id[:200],
                    uri=run_uri(r.run_id),
                    description=f"{r.workflow} ({r.status})"[:300],
                    mime_type="application/json",
                )
                for r in rows
            ]
        )

    async def read_resource(ctx: Any, params: Any) -> types.ReadResourceResult:
        uri = str(params.uri)
        try:
            args = {"run": run_of(uri)[:300], "attempts_limit": 50, "cursor": None}
            data = await in_thread(svc, limiter, lambda: READS["show_run"][0](svc, args))
        except LetItLoopError as exc:
            raise MCPError(types.INVALID_PARAMS, _said(exc)) from None
        text = dumps(fit(data, "attempts", 0, svc.limits.max_result))
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
        ]
        return types.ReadResourceResult(contents=contents)

    async def subscribe(ctx: Any, params: Any) -> types.EmptyResult:
        try:
            await follow.subscribe(connection_key(ctx), ctx.session, str(params.uri))
        except LetItLoopError as exc:
            raise MCPError(types.INVALID_PARAMS, _said(exc)) from None
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: Any) -> types.EmptyResult:
        try:
            await follow.unsubscribe(connection_key(ctx), str(params.uri))
        except LetItLoopError as exc:
            raise MCPError(types.INVALID_PARAMS, _said(exc)) from None
        return types.EmptyResult()

    listen = ListenHandler(follow.bus, max_subscriptions=16, max_buffered_events=64)

    async def subscriptions_listen(ctx: Any, params: Any) -> Any:
        uris = list(params.notifications.resource_subscriptions or [])
        try:
            runs = await follow.listen(uris)
        except LetItLoopError as exc:
            raise MCPError(types.INVALID_PARAMS, _said(exc)) from None
        try:
            return await listen(ctx, params)
        finally:
            with anyio.CancelScope(shield=True):
                await follow.unlisten(runs)

    return Server(
        "letitloop",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=subscriptions_listen,
    )


def _said(exc: LetItLoopError) -> str:
    return (exc.message + (f" (fix: {exc.fix})" if exc.fix else ""))[:1000]
