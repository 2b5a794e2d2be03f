"""``lil mcp`` (and ``python -m letitloop.mcp``): the MCP server's command line, declared here
once. ``lil`` lists it among its commands by name, without importing this package; the mcp SDK
is imported only when the server starts."""

from __future__ import annotations

from pathlib import Path

import click

# where ``lil --journal PATH mcp`` keeps the group's --journal (``letitloop.cli``'s convention)
GROUP_JOURNAL = "lil.journal"
TOKEN_FILE = Path(".letitloop") / "mcp.token"


@click.command("mcp")
@click.option("--http", "http", is_flag=True, help="Serve Streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP address (loopback).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="HTTP port (0: any free one, printed at start).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where the HTTP bearer token is kept (default: .letitloop/mcp.token of the project; "
    "$LIL_MCP_TOKEN overrides).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Let --host be an address other than loopback (anyone who reaches it with the token "
    "can read the journal).",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=".",
    help="The project (its pyproject.toml, tasks/ and files). Default: the current directory.",
)
@click.option(
    "--journal",
    metavar="PATH",
    help="Journal file, directory or postgresql:// URL (default: $LIL_JOURNAL, else found "
    "from the project like `lil` does).",
)
@click.pass_context
def mcp(
    ctx: click.Context,
    http: bool,
    host: str,
    port: int,
    token_file: Path | None,
    allow_remote: bool,
    root: Path,
    journal: str | None,
) -> None:
    """Serve the journal to coding agents over the Model Context Protocol (stdio, or --http).

    Agents read runs, steps, errors with their fixes, side effects in doubt, approvals,
    proposals, notifications, limits, SQL and the report; they act (resume, retry, cancel,
    fork, propose a splice, start a task, verify a receipt) only where [tool.letitloop.mcp]
    allow = [...] in pyproject.toml says so. Approving, resolving and applying stay a person's.
    docs/mcp.md shows the one-line set-up for Claude Code, Codex, Cursor and VS Code.

    \b
    Examples:
        lil mcp
        lil mcp --http --port 8765
        claude mcp add letitloop -- lil mcp
    """
    import anyio

    from letitloop.errors import LetItLoopError
    from letitloop.mcp._options import Limits, load_settings
    from letitloop.mcp._service import Service

    base = root.resolve()
    try:
        svc = Service(
            journal or ctx.meta.get(GROUP_JOURNAL), base, load_settings(base), Limits.from_env()
        )
        if http:
            from letitloop.mcp._http import serve_http

            tokens = token_file if token_file is not None else base / TOKEN_FILE
            anyio.run(serve_http, svc, host, port, tokens, allow_remote)
        else:
            anyio.run(serve_stdio, svc)
    except LetItLoopError as exc:
        text = f"error: {exc.message}" + (f"\n  fix: {exc.fix}" if exc.fix else "")
        click.echo(text, err=True)
        ctx.exit(1)
    except KeyboardInterrupt:
        pass


async def serve_stdio(svc: object) -> None:
    """Serve one client over stdin/stdout until it closes stdin (or stops reading: dropped)."""
    import anyio

    from letitloop.mcp._follow import Follow
    from letitloop.mcp._server import build
    from letitloop.mcp._service import Service
    from letitloop.mcp._stdio import ClientGone, bounded_stdio, say

    assert isinstance(svc, Service)
    follow = Follow(svc, svc.limits)
    server = build(svc, follow)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(follow.run)
            async with bounded_stdio(svc.limits) as (read, write):
                await server.run(read, write, server.create_initialization_options())
            tg.cancel_scope.cancel()
    except* ClientGone as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        say(f"dropped the client: {leaf}")
        raise SystemExit(2) from None
