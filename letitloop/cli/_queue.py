"""``lil queue``, ``lil enqueue`` and ``lil worker``: queued runs and who runs them."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import journal_option, journal_spec, json_option, open_cli_journal
from letitloop.operate import (
    duration as fmt_duration,
    enqueue_by_name,
    find_queue,
    fleet_json,
    item_json,
    orphan_summaries,
    parse_arguments,
    pause_queue,
    queue_json,
    queue_summaries,
    worker_summaries,
)


@click.group()
def queue() -> None:
    """See queues and their workers; pause and resume a queue."""


@queue.command("list")
@json_option
@journal_option
def list_cmd(as_json: bool) -> None:
    """Every queue: what waits, what runs, how long the oldest has waited; the workers; and the
    orphaned runs no worker takes over (their process died; they were not declared recoverable).

    \b
    Example:
        lil queue list
        lil queue list --json
    """
    journal = open_cli_journal()
    if as_json:
        out.emit_json(fleet_json(journal))
        return
    queues, workers = queue_summaries(journal), worker_summaries(journal)
    orphans = orphan_summaries(journal)
    if not queues:
        out.say("no queue in this journal yet: Queue(name).enqueue(...) or `lil enqueue` makes one")
    else:
        table = out.make_table(
            "queue", "queued", "running", "held", "oldest", "limits", "state",
            right=("queued", "running", "held"),
        )  # fmt: skip
        for q in queues:
            table.add_row(
                out.text(q.name, "bold"),
                str(q.queued),
                str(q.running),
                str(q.info.held),
                fmt_duration(q.oldest_age) if q.oldest_age is not None else "-",
                out.text(q.limits),
                out.status_text("paused" if q.paused else "active"),
            )
        out.console().print(table)
    _print_workers(workers)
    _print_orphans(orphans)


def _print_orphans(orphans: Any) -> None:
    if not orphans:
        return
    out.say(
        f"{len(orphans)} orphaned runs: their process died and no worker takes them over "
        "(declare a workflow @durable(recover=True) to have workers do it)"
    )
    table = out.make_table("run id", "steps done", "idle", "resume with")
    for o in orphans:
        table.add_row(
            out.text(o.run_id, "bold"),
            str(o.steps_done),
            fmt_duration(o.idle),
            out.text(o.command),
        )
    out.console().print(table)


def _print_workers(workers: Any) -> None:
    if not workers:
        out.say("no worker: start one with `lil worker`")
        return
    table = out.make_table("worker", "state", "runs in hand", "heartbeat", "queues")
    for w in workers:
        table.add_row(
            out.text(w.worker, "bold"),
            out.status_text(w.state),
            out.text(", ".join(w.runs) or "-"),
            f"{fmt_duration(w.heartbeat_age)} ago",
            out.text(", ".join(w.queues) or "all"),
        )
    out.console().print(table)


@queue.command("show")
@click.argument("name")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True)
@json_option
@journal_option
def show_cmd(name: str, limit: int, as_json: bool) -> None:
    """One queue: its limits, its runs (running first) and who holds each.

    \b
    Example:
        lil queue show embeddings
    """
    journal = open_cli_journal()
    q = find_queue(journal, name)
    items = journal.queue_items(queue=name, limit=limit)
    if as_json:
        out.emit_json(queue_json(q) | {"items": [item_json(i) for i in items]})
        return
    state = "paused" if q.paused else "active"
    out.say(f"{q.name}: {state}, {q.queued} queued, {q.running} running; {q.limits}")
    table = out.make_table("run id", "state", "worker", "claims", "enqueued", right=("claims",))
    for i in items:
        table.add_row(
            out.text(i.run_id),
            out.status_text(i.outcome or i.state),
            out.text(i.claimed_by.split("/", 1)[0] if i.claimed_by else "-"),
            str(i.claims),
            out.ago(i.enqueued),
        )
    out.console().print(table)


@queue.command("pause")
@click.argument("name")
@json_option
@journal_option
def pause_cmd(name: str, as_json: bool) -> None:
    """Stop workers taking runs from NAME (runs already taken go on)."""
    outcome = pause_queue(open_cli_journal(), name, paused=True)
    out.emit_json(outcome.to_json()) if as_json else out.say(outcome.message)


@queue.command("resume")
@click.argument("name")
@json_option
@journal_option
def resume_cmd(name: str, as_json: bool) -> None:
    """Let workers take runs from NAME again."""
    outcome = pause_queue(open_cli_journal(), name, paused=False)
    out.emit_json(outcome.to_json()) if as_json else out.say(outcome.message)


@click.command("enqueue")
@click.argument("target", metavar="MODULE:FN")
@click.argument("args", nargs=-1)
@click.option("--queue", "queue_name", default="default", show_default=True, help="The queue.")
@click.option("--key", default=None, help="The run's key (default: from its arguments).")
@click.option("--priority", type=int, default=0, show_default=True, help="Lower runs first.")
@json_option
@journal_option
def enqueue_cmd(
    target: str, args: tuple[str, ...], queue_name: str, key: str | None, priority: int,
    as_json: bool,
) -> None:  # fmt: skip
    """Queue a call of the durable workflow MODULE:FN with ARGS (each a JSON value, else text).

    \b
    Example:
        lil enqueue pipeline:embed 42 --queue embeddings
        lil enqueue pipeline:embed '"doc-7"' --key doc-7
    """
    sys.path.insert(0, os.getcwd())
    outcome = enqueue_by_name(
        target, parse_arguments(args), queue=queue_name, key=key, priority=priority,
        journal=journal_spec(),
    )  # fmt: skip
    out.emit_json(outcome.to_json()) if as_json else out.say(outcome.message)


@click.command("worker")
@click.option("--queue", "queues", multiple=True, help="A queue to take runs from (repeat).")
@click.option("--concurrency", type=click.IntRange(1, 1000), default=4, show_default=True)
@click.option("--grace", type=click.FloatRange(min=0), default=30.0, show_default=True,
              help="Seconds the runs in hand have to finish after SIGTERM.")  # fmt: skip
@click.option("--ttl", type=click.FloatRange(min=0.2), default=None,
              help="Heartbeat TTL in seconds (default: LIL_LEASE_TTL, else 30).")  # fmt: skip
@click.option("--until-empty", is_flag=True, help="Exit once the queues are empty.")
@click.option("--dask", "dask_address", default=None, metavar="tcp://HOST:PORT",
              help="Run the claimed runs on this Dask cluster's workers.")  # fmt: skip
@journal_option
def worker_cmd(
    queues: tuple[str, ...], concurrency: int, grace: float, ttl: float | None,
    until_empty: bool, dask_address: str | None,
) -> None:  # fmt: skip
    """Claim queued runs (and runs a dead worker held) and execute them.

    SIGTERM (or Ctrl+C) drains: no new claims, the runs in hand finish within --grace seconds,
    then what is left goes back to the queue for other workers.

    \b
    Example:
        lil worker --queue embeddings --concurrency 8
    """
    from letitloop.kernel import Worker, WorkerOptions, default_ttl

    sys.path.insert(0, os.getcwd())  # workflows import as `python -m` would find them
    journal = open_cli_journal()
    opts = WorkerOptions(
        queues=queues, concurrency=concurrency, ttl=ttl or default_ttl(), grace=grace,
        until_empty=until_empty,
    )  # fmt: skip
    execute = None
    slot_journal = None
    if dask_address is not None:
        from letitloop.distributed import dask_execute

        execute = dask_execute(dask_address, journal)
    elif concurrency > 1:  # PostgreSQL: a connection per run in hand
        from letitloop.journal import private_journals

        slot_journal = private_journals(journal)
    worker = Worker(journal, opts, execute, slot_journal)
    signals: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        signals.append(signum)
        if len(signals) > 1:
            os._exit(128 + signum)  # a second Ctrl+C: now
        worker.drain()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    orphans = orphan_summaries(journal)
    if orphans:
        out.stderr_write(
            f"lil worker: {len(orphans)} orphaned runs are not recoverable, so no worker takes "
            "them over: `lil queue list` shows each with the command that resumes it"
        )
    worker.run()
    counts = ", ".join(f"{n} {k}" for k, n in sorted(worker.counts.items())) or "no runs"
    out.stderr_write(f"lil worker: stopped ({counts})")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # runs still executing after the grace period were released: do not wait
