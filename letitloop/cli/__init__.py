"""``lil``: inspect and repair letitloop journals from the command line.

    lil runs list                     lil effects list             lil journal status
    lil runs show RUN                 lil effects resolve ...      lil journal doctor
    lil runs resume RUN               lil approvals list           lil journal sql "SELECT ..."
    lil runs reset RUN                lil approvals approve ID     lil watch script.py
    lil runs gc --older-than 7d       lil demo

Every command takes ``--journal PATH`` (default: $LIL_JOURNAL, else discovery as in
``journal._config``) and most take ``--json``. Library errors print ``error: ...`` and
``  fix: ...`` on stderr and exit 1. Command modules are imported only when their command runs,
and the kernel client never imports duckdb, so ``lil --help`` is quick.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from letitloop._version import __version__
from letitloop.cli._shared import LilGroup, journal_option

__all__ = ["COMMANDS", "lil", "main"]

# name -> (module, attribute, short help shown by `lil --help` without importing the module)
COMMANDS = {
    "approvals": (
        "letitloop.cli._approvals",
        "approvals",
        "See and decide the approvals runs are waiting for.",
    ),
    "bench": (
        "letitloop.cli._bench",
        "bench_cmd",
        "Kill agent frameworks for real and count what each crash cost.",
    ),
    "cache": ("letitloop.cli._cache", "cache", "List and clear cached step outputs."),
    "demo": (
        "letitloop.cli._demo",
        "demo_cmd",
        "Run a durable pipeline for real, SIGKILL it mid-run, resume it, and show what happened.",
    ),
    "effects": ("letitloop.cli._effects", "effects", "Find and resolve side effects in doubt."),
    "enqueue": (
        "letitloop.cli._queue",
        "enqueue_cmd",
        "Queue a call of the durable workflow MODULE:FN with ARGS (each a JSON value, else text).",
    ),
    "journal": ("letitloop.cli._journal", "journal", "The journal file and its owner process."),
    "limits": (
        "letitloop.cli._notify",
        "limits_cmd",
        "Show the shared rate limits in use and what is left of each.",
    ),
    "lsp": (  # the language server declares its own command line
        "letitloop.lsp._command",
        "lsp",
        "Start the language server for editors (stdio, or --tcp).",
    ),
    "mcp": (  # the MCP server declares its own command line
        "letitloop.mcp._command",
        "mcp",
        "Serve the journal to coding agents over the Model Context Protocol (stdio, or --http).",
    ),
    "metrics": (
        "letitloop.cli._metrics",
        "metrics_cmd",
        "Serve the journal's metrics for Prometheus at http://HOST:PORT/metrics, or push them.",
    ),
    "notify": (
        "letitloop.cli._notify",
        "notify",
        "See the notification outbox and retry failed webhooks.",
    ),
    "queue": (
        "letitloop.cli._queue",
        "queue",
        "See queues and their workers; pause and resume a queue.",
    ),
    "receipt": ("letitloop.cli._receipt", "receipt", "Sign what really ran in CI, and verify it."),
    "report": (
        "letitloop.cli._report",
        "report_cmd",
        "Where the time and money went: cost per workflow and model, slowest steps, failures.",
    ),
    "run": ("letitloop.cli._run", "run_group", "Run a coding-agent task durably (--task NAME)."),
    "runs": (
        "letitloop.cli._runs",
        "runs",
        "List, inspect, resume, cancel, retry, budget, reset and gc runs.",
    ),
    "splice": ("letitloop.cli._splice", "splice", "Replace, insert or delete one def or class."),
    "tui": (
        "letitloop.cli._tui",
        "tui",
        "Open the terminal dashboard (runs, approvals, effects, splices).",
    ),
    "worker": (
        "letitloop.cli._queue",
        "worker_cmd",
        "Claim queued runs (and runs a dead worker held) and execute them.",
    ),
    "watch": (
        "letitloop.cli._watch",
        "watch_cmd",
        "Run a script (or -m module) and restart it whenever it crashes.",
    ),
}


@click.group(cls=LilGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lil", message="%(prog)s (letitloop) %(version)s")
@journal_option
def lil() -> None:
    """Inspect and repair letitloop journals: runs, side effects in doubt, the journal itself.

    \b
    Examples:
        lil runs list --status failed
        lil effects list
        lil journal doctor
        lil demo
    """


def main(argv: Sequence[str] | None = None) -> None:
    """The ``lil`` console script (and ``python -m letitloop``)."""
    lil.main(args=list(argv) if argv is not None else None, prog_name="lil")
