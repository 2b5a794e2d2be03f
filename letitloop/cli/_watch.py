"""``lil watch``: run a script and restart it whenever it crashes."""

from __future__ import annotations

import click

from letitloop.cli._shared import journal_option, journal_spec


@click.command(
    "watch",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("-m", "module", metavar="MODULE", help="Run a module (as python -m) instead.")
@click.option(
    "--max-restarts",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Crashes in a row (each soon after a start) tolerated before giving up.",
)
@click.option(
    "--backoff",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Seconds before the first restart; doubles after each crash in a row.",
)
@click.option(
    "--max-backoff",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="The longest wait between restarts, in seconds.",
)
@click.option(
    "--healthy-after",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds after which a running child counts as healthy (resets the count).",
)
@click.option(
    "--no-restart-on",
    "no_restart",
    type=int,
    multiple=True,
    metavar="CODE",
    help="An exit code that means 'stopped on purpose'; repeat for several.",
)
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
@journal_option
def watch_cmd(
    module: str | None,
    max_restarts: int,
    backoff: float,
    max_backoff: float,
    healthy_after: float,
    no_restart: tuple[int, ...],
    argv: tuple[str, ...],
) -> None:
    """Run a script (or -m module) and restart it whenever it crashes.

    A crash is a non-zero exit or a death by signal (SIGKILL and the OOM killer included);
    exit 0 and the --no-restart-on codes end the watch. Durable workflows in the script resume
    where they stopped. Each restart is journaled against the runs the crashed process started
    (on a DuckDB or a PostgreSQL journal), and `lil runs show` lists it.
    Ctrl+C and SIGTERM go to the script and stop the watch.

    \b
    Examples:
        lil watch pipeline.py --date 2026-11-29
        lil watch --max-restarts 3 -m mypkg.worker
    """
    from letitloop.journal import find_location
    from letitloop.kernel import RestartPolicy, watch

    if module is None and not argv:
        raise click.UsageError("give a script to run (lil watch script.py ...) or -m MODULE")
    command = ["-m", module, *argv] if module else list(argv)
    policy = RestartPolicy(max_restarts, backoff, max_backoff, healthy_after, frozenset(no_restart))
    raise SystemExit(watch(command, policy, find_location(journal_spec())))
