"""``lil report``: where the time and money went, in the terminal (the summary of every run:
cost per workflow and model, the slowest steps, failure rates, a sparkline per day).

It draws ``journal._analytics.summary``; ``letitloop.report()`` and lil-tui's analytics screen
draw the same summary."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from letitloop import operate as fmt
from letitloop.cli import _output as out
from letitloop.cli._shared import journal_option, json_option, open_cli_journal


@click.command("report")
@click.option("--since", default=None, help="Only what started after: 7d, 12h, or a date.")
@click.option(
    "--top", default=10, show_default=True, type=click.IntRange(1, 1000), help="Rows per table."
)
@json_option
@journal_option
def report_cmd(since: str | None, top: int, as_json: bool) -> None:
    """Where the time and money went: cost per workflow and model, slowest steps, failures.

    The summary of every run of the journal (DuckDB or PostgreSQL): cost per workflow and
    model, p50/p95 latency per step name, failure and retry rates, and a sparkline per day.

    \b
    Examples:
        lil report
        lil report --since 7d --top 5
        lil report --json | jq .by_workflow_model
    """
    from letitloop import journal as an

    summary = an.summary(open_cli_journal(), an.parse_since(since), top=top)
    if as_json:
        out.emit_json(dataclasses.asdict(summary))
        return
    for n, part in enumerate(render(summary)):
        if n > 1:
            out.say("")
        out.say(part)


def render(s: Any) -> list[Any]:
    """The report as rich renderables, top to bottom."""

    parts: list[Any] = [
        out.text(f"letitloop report · {s.location} · {fmt.since_words(s.since)}", "bold"),
    ]
    if not s.attempts and not s.runs:
        parts.append(
            out.text(
                "no runs in this journal yet"
                if s.since is None
                else "no runs in this time; try a longer --since",
                "yellow",
            )
        )
        return parts
    failed = fmt.pct(s.failed_runs / s.runs) if s.runs else "-"
    parts.append(
        out.kv_table(
            [
                ("runs", f"{s.runs:,} ({s.failed_runs:,} failed, {failed})"),
                ("step attempts", f"{s.attempts:,} ({s.failed_attempts:,} failed)"),
                ("cost", f"{fmt.dollars(s.cost_usd)} · {s.tokens:,} tokens"),
                ("saved by cache", fmt.dollars(s.saved_usd)),
            ]
        )
    )
    if s.days:
        daily = out.make_table("per day", s.days[0] + " → " + s.days[-1], "peak", right=["peak"])
        daily.add_row(
            "cost", out.text(fmt.sparkline(s.daily_cost), "green"), fmt.dollars(max(s.daily_cost))
        )
        daily.add_row(
            "attempts",
            out.text(fmt.sparkline(s.daily_attempts), "cyan"),
            f"{max(s.daily_attempts):,}",
        )
        daily.add_row(
            "failures", out.text(fmt.sparkline(s.daily_failed), "red"), f"{max(s.daily_failed):,}"
        )
        parts.append(daily)
    money = ["calls", "cost", "tokens in", "tokens out"]
    table = out.make_table(
        "workflow", "model", *money, title="Cost per workflow and model", right=money
    )
    for r in s.by_workflow_model:
        table.add_row(
            out.text(r["workflow"]),
            out.text(r["model"] or "-"),
            f"{r['calls']:,}",
            fmt.dollars(r["cost_usd"]),
            f"{r['tokens_in'] or 0:,}",
            f"{r['tokens_out'] or 0:,}",
        )
    parts.append(table if s.by_workflow_model else out.text("no step recorded a cost", "dim"))
    times = ["attempts", "p50", "p95", "max"]
    slow = out.make_table("name", *times, title="Slowest steps (p95)", right=times)
    for r in s.slowest:
        slow.add_row(
            out.text(r["name"]),
            f"{r['attempts']:,}",
            fmt.duration(r["p50_s"]),
            fmt.duration(r["p95_s"]),
            fmt.duration(r["max_s"]),
        )
    parts.append(slow)
    rates = ["attempts", "failed", "retries", "failure rate", "retry rate"]
    fails = out.make_table("name", *rates, title="Failures and retries", right=rates)
    for r in s.failures:
        fails.add_row(
            out.text(r["name"]),
            f"{r['attempts']:,}",
            f"{r['failed']:,}",
            f"{r['retries']:,}",
            out.text(fmt.pct(r["failure_rate"]), "red"),
            fmt.pct(r["retry_rate"]),
        )
    parts.append(fails if s.failures else out.text("no step failed", "green"))
    runs = ["runs", "failed", "failure rate", "cost", "saved"]
    wf = out.make_table("workflow", *runs, title="Workflows", right=runs)
    for r in s.workflows:
        wf.add_row(
            out.text(r["workflow"]),
            f"{r['runs']:,}",
            f"{r['failed']:,}",
            fmt.pct(r["failure_rate"]),
            fmt.dollars(r["cost_usd"]),
            fmt.dollars(r["saved_usd"]),
        )
    parts.append(wf)
    return parts
