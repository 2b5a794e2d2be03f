"""The letitloop language server (``lil lsp``): durable-code diagnostics, journal hovers and
code lenses, and code actions through the splicer.

Importing this package is cheap: pygls is imported only when the server starts
(``letitloop.lsp._server``). The pure parts (``_analysis``, ``_positions``, ``_actions``,
``_journal_view``) import neither pygls nor the journal client at module level.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, prog: str = "lil lsp") -> None:
    """Start the server for editors, over stdio or ``--tcp`` (``lil lsp`` and
    ``python -m letitloop.lsp``): ``[--tcp] [--host H] [--port P] [--journal PATH]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Start the language server for editors (stdio, or --tcp). Editors start it "
        "themselves: docs/editors.md shows how to register it with VS Code, Neovim and "
        "jupyter-lsp. It reads the journal through its owner process (or PostgreSQL), never "
        "opens the DuckDB file, and never runs your code.",
    )
    parser.add_argument("--tcp", action="store_true", help="Listen on TCP instead of stdio.")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host (default: 127.0.0.1).")
    parser.add_argument("--port", type=_port, default=2087, help="TCP port (default: 2087).")
    parser.add_argument(
        "--journal", metavar="PATH", help="Journal file, directory or postgresql:// URL."
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    from letitloop.lsp._server import create_server

    server = create_server(args.journal)
    if not args.tcp:
        server.start_io()
        return
    import logging

    # pygls says "Serving on ('HOST', PORT)" once it listens: show it (stdout is free here).
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("lil lsp: %(message)s"))
    log = logging.getLogger("pygls.server")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    server.start_tcp(args.host, args.port)


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(text)
    return port
