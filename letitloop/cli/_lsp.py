"""``lil lsp``: launches the language server (its options are its own: ``letitloop.lsp.main``)."""

from __future__ import annotations

import click

from letitloop.cli._shared import journal_option, journal_spec


@click.command(
    "lsp",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@journal_option
def lsp(args: tuple[str, ...]) -> None:
    """Start the language server for editors (stdio, or --tcp [--host H] [--port P]).

    Editors start it themselves: docs/editors.md shows how to register it with VS Code,
    Neovim and jupyter-lsp. It reads the journal through its owner process, never opens the
    DuckDB file, and never runs your code. `lil lsp --help` lists its options.

    \b
    Examples:
        lil lsp
        lil lsp --tcp --port 2087
        lil --journal .letitloop/journal.duckdb lsp
    """
    from letitloop.lsp import main

    spec = journal_spec()
    main([*args, *(["--journal", str(spec)] if spec is not None else [])])
