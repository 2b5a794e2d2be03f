"""``lil lsp``: the language server for editors (see docs/editors.md)."""

from __future__ import annotations

import click

from letitloop.cli._shared import journal_option, journal_spec


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
@journal_option
def lsp(tcp: bool, host: str, port: int) -> None:
    """Start the language server for editors (stdio, or --tcp).

    Editors start it themselves: docs/editors.md shows how to register it with VS Code,
    Neovim and jupyter-lsp. It reads the journal through its owner process, never opens the
    DuckDB file, and never runs your code.

    \b
    Examples:
        lil lsp
        lil lsp --tcp --port 2087
        lil --journal .letitloop/journal.duckdb lsp
    """
    from letitloop.lsp._server import create_server

    server = create_server(journal_spec())
    if tcp:
        import logging

        # pygls says "Serving on ('HOST', PORT)" once it listens: show it (stdout is free here).
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("lil lsp: %(message)s"))
        log = logging.getLogger("pygls.server")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        server.start_tcp(host, port)
    else:
        server.start_io()
