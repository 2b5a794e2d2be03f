"""``lil-tui``: the terminal dashboard of letitloop (runs, approvals, effects in doubt, splices).

Textual is imported only when ``main`` runs, so importing this package stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """The ``lil-tui`` console script: ``lil-tui [--journal PATH]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="lil-tui",
        description="Open the terminal dashboard (runs, approvals, effects, splices).",
    )
    parser.add_argument(
        "--journal",
        metavar="PATH",
        help="Journal file or directory. Default: $LIL_JOURNAL, else found from the current "
        "directory like `lil` does.",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    from letitloop.errors import LetItLoopError

    try:
        from letitloop.tui._app import run_app

        run_app(args.journal)
    except LetItLoopError as exc:  # e.g. no journal can be found from here
        import sys

        text = f"error: {exc.message}" + (f"\n  fix: {exc.fix}" if exc.fix else "")
        sys.exit(text)
