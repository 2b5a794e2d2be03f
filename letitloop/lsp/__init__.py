"""The letitloop language server (``lil lsp``): durable-code diagnostics, journal hovers and
code lenses, and code actions through the splicer.

Importing this package is cheap: pygls is imported only when the server starts
(``letitloop.lsp._server``). The pure parts (``_analysis``, ``_positions``, ``_actions``,
``_journal_view``) import neither pygls nor the journal client at module level.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server as ``lil lsp`` does (``python -m letitloop.lsp [--tcp] [--journal PATH]``)."""
    from letitloop.lsp._command import lsp

    lsp.main(args=list(argv) if argv is not None else None, prog_name="lil lsp")
