"""``lil tui``: the terminal dashboard, the same app as the ``lil-tui`` script."""

from __future__ import annotations

import click

from letitloop.cli._shared import journal_option, journal_spec


@click.command("tui")
@journal_option
def tui() -> None:
    """Open the terminal dashboard (runs, approvals, effects, splices).

    \b
    Keys: 1 runs, 2 approvals, 3 effects, 4 splices, Enter opens a run, ? help, ctrl+p commands,
    q quits.

    \b
    Example:
        lil tui --journal .letitloop/journal.duckdb
    """
    from letitloop.tui import main

    spec = journal_spec()
    main(["--journal", str(spec)] if spec is not None else [])
