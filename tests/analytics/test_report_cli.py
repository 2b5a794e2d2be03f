"""``lil report`` on a real journal: the numbers the made-up runs imply, in the terminal and as
JSON, narrowed by --since; the same report from a PostgreSQL journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import synthetic

from letitloop.cli import COMMANDS
from letitloop.journal import open_journal
from tests.helpers import invoke_lil, run_lil


def report(journal: str, *args: str) -> Any:
    result = invoke_lil("report", "--journal", journal, *args)
    assert result.exit_code == 0, result.output
    return result.output


def test_report_in_the_terminal(journal_path: Path) -> None:
    synthetic.fill(open_journal(journal_path))
    text = report(str(journal_path))
    lines = text.splitlines()
    assert lines[0] == f"letitloop report · {journal_path} · all time"
    assert "60 (5 failed, 8.3%)" in text and "342 (47 failed)" in text
    assert "$0.0833 · 24,960 tokens" in text and "saved by cache  $0.012" in text
    spark = lines[lines.index(next(ln for ln in lines if ln.startswith("per day"))) + 1]
    assert len(spark.split()[1]) == 7 and "█" in spark  # one bar per day, the peak full height
    slow = lines[lines.index("Slowest steps (p95)") + 2]
    assert slow.split()[0] == "summarize"  # its calls take up to 2 s, the others 0.5 s
    fails = lines[lines.index("Failures and retries") + 2]
    assert fails.split()[:4] == ["notify", "68", "13", "8"]  # where the failing runs stop
    for title in ("Cost per workflow and model", "Workflows"):
        assert title in lines
    assert "cost per workflow" in COMMANDS["report"][2]


def test_report_as_json_and_since(journal_path: Path) -> None:
    synthetic.fill(open_journal(journal_path))
    every = json.loads(report(str(journal_path), "--json"))
    assert (every["runs"], every["attempts"], every["failed_runs"]) == (60, 342, 5)
    assert len(every["days"]) == len(every["daily_cost"]) == 7
    assert {r["model"] for r in every["by_workflow_model"]} == set(synthetic.MODELS.values())
    late = json.loads(report(str(journal_path), "--json", "--since", "2026-11-05", "--top", "2"))
    assert 0 < late["attempts"] < 342 and late["days"][0] == "2026-11-05"
    assert len(late["slowest"]) == 2
    text = report(str(journal_path), "--since", "1s")
    assert "no runs in this time; try a longer --since" in text


def test_report_of_an_empty_journal_and_a_bad_since(journal_path: Path) -> None:
    open_journal(journal_path).list_runs()  # the journal exists, with nothing in it
    assert "no runs in this journal yet" in report(str(journal_path))
    bad = invoke_lil("report", "--journal", str(journal_path), "--since", "soon")
    assert bad.exit_code == 1
    assert "neither a duration nor a date" in bad.output and "fix:" in bad.output


def test_report_of_a_postgres_journal(pg_dsn: str) -> None:
    synthetic.fill(open_journal(pg_dsn))
    done = run_lil("report", "--journal", pg_dsn)
    assert done.returncode == 0, done.stderr
    assert "60 (5 failed, 8.3%)" in done.stdout and "342 (47 failed)" in done.stdout
    assert "$0.0833 · 24,960 tokens" in done.stdout
