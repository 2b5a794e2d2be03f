"""``lil bench``: the durability benchmark (thin over ``letitloop.bench``, imported when run)."""

from __future__ import annotations

from pathlib import Path

import click

FILE = click.Path(dir_okay=False, path_type=Path)


@click.command("bench")
@click.option("--quick", is_flag=True, help="3 faults per framework and scenario (a smoke run).")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON.")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the table as Markdown.")
@click.option("--frameworks", metavar="A,B", help="Only these (see --list); default: all.")
@click.option("--kills", type=int, help="Faults that must land per framework and scenario.")
@click.option("--seed", type=int, default=None, help="Seed of every fault's kind and point.")
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    metavar="PATH",
    help="A scenario file (TOML) to run instead of the shipped ones; repeatable.",
)
@click.option(
    "--planted-bug",
    is_flag=True,
    help="Also run letitloop with a journal that acks before writing: it must show lost work.",
)
@click.option("--pg", "pg_url", metavar="URL", help="An existing PostgreSQL server to use.")
@click.option("--out", type=FILE, help="Also write the JSON results to this file.")
@click.option("--receipt", type=FILE, help="Run under a signed receipt written to this file.")
@click.option("--key-file", type=FILE, help="The receipt's HMAC key (default $LIL_RECEIPT_KEY).")
@click.option(
    "--signing-key",
    type=FILE,
    help="An Ed25519 private key (PEM): a signature anyone with the public key can check.",
)
@click.option("--from", "from_file", type=FILE, help="Print results written earlier.")
@click.option(
    "--jobs",
    type=int,
    default=2,
    show_default=True,
    help="Frameworks run side by side (PostgreSQL ones in one lane).",
)
@click.option("--keep", is_flag=True, help="Keep the scratch directory (journals, logs).")
@click.option("--list", "list_only", is_flag=True, help="List frameworks and scenarios, then exit.")
def bench_cmd(list_only: bool, seed: int | None, **kwargs: object) -> None:
    """Kill agent frameworks for real and count what each crash cost.

    Each scenario (a chain of model calls, a tool-using agent with side effects, a fan-out, a
    human approval, a multi-agent handoff) runs on every framework installed here, on an
    offline model served from 127.0.0.1. The harness SIGKILLs the worker at seeded moments and
    inside side effects, sends SIGTERM then SIGKILL, triggers the OOM killer and restarts
    PostgreSQL, restarts the worker as the framework resumes, and judges only from what the
    counter server saw: work lost, calls and tokens run again, duplicate side effects, time to
    progress, whether a person had to act, and whether the answer was right. docs/bench.md.

    \b
    Examples:
        lil bench --quick
        lil bench --frameworks letitloop,langgraph --kills 20 --seed 7 --markdown
        lil bench --receipt bench-receipt.json --key-file ci.key
    """
    from letitloop.bench._command import Request, emit, run
    from letitloop.bench._options import DEFAULT_SEED

    if list_only:
        _list()
        return
    req = Request(seed=DEFAULT_SEED if seed is None else seed, **kwargs)  # type: ignore[arg-type]

    def say(line: str) -> None:
        click.echo(line, err=True)

    emit(req, run(req, say))


def _list() -> None:
    from letitloop.bench._frameworks import FRAMEWORKS, PLANTED, python_for
    from letitloop.bench._scenario import load, shipped_paths

    click.echo("frameworks:")
    for fw in (*FRAMEWORKS, PLANTED):
        python, where = python_for(fw)
        click.echo(f"  {fw.id:<16} {fw.title:<34} {where if python else 'missing: ' + where}")
    click.echo("scenarios:")
    for path in shipped_paths():
        sc = load(path)
        click.echo(f"  {sc.name:<16} {sc.title}")
