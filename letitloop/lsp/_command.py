"""``lil lsp`` (and ``python -m letitloop.lsp``): the language server's command line, declared
here once. ``lil`` lists it among its commands by name, without importing this package."""

from __future__ import annotations

import click

# where ``lil --journal PATH lsp`` keeps the group's --journal (``letitloop.cli``'s convention)
GROUP_JOURNAL = "lil.journal"


@click.command("lsp")
@click.option("--tcp", is_flag=True, help="Listen on TCP instead of speaking over stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="TCP host (with --tcp).")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=2087,
    show_default=True,
    help="TCP port (with --tcp).",
)
@click.option(
    "--journal",
    metavar="PATH",
    help="Journal file, directory or postgresql:// URL (default: "
    "$LIL_JOURNAL, else found from the current directory like `lil` does).",
)
@click.pass_context
def lsp(ctx: click.Context, tcp: bool, host: str, port: int, journal: str | None) -> None:
    """Start the language server for editors (stdio, or --tcp).

    Editors start it themselves: docs/editors.md shows how to register it with VS Code,
    Neovim and jupyter-lsp. It reads the journal through its owner process (or PostgreSQL),
    never opens the DuckDB file, and never runs your code.

    \b
    Examples:
        lil lsp
        lil lsp --tcp --port 2087
        lil --journal .letitloop/journal.duckdb lsp
    """
    from letitloop.lsp._server import create_server

    server = create_server(journal or ctx.meta.get(GROUP_JOURNAL))
    if not tcp:
        server.start_io()
        return
    import logging

    # pygls says "Serving on ('HOST', PORT)" once it listens: show it (stdout is free here).
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("lil lsp: %(message)s"))
    log = logging.getLogger("pygls.server")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    server.start_tcp(host, port)
