"""The views and recipes of docs/analytics.md give exactly the numbers the records imply, on the
DuckDB journal and on PostgreSQL alike (the answers are computed here again, in plain Python)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

import pytest

from letitloop.journal import _analytics as analytics


def attempts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per step attempt, folded from the records the way the journal folds them."""
    rows: dict[tuple[str, int, int, int], dict[str, Any]] = {}
    tries: dict[str, float] = {}
    workflow: dict[str, str] = {}
    for rec in records:
        if rec["k"] == "run":
            tries[rec["run"]] = rec["ts"]
            workflow[rec["run"]] = rec["wf"]
        if rec["k"] not in ("step", "ok", "err"):
            continue
        row = rows.setdefault((rec["run"], rec["epoch"], rec["pos"], rec["att"]), {})
        row.update(run=rec["run"], name=rec["name"], pos=rec["pos"], wf=workflow[rec["run"]])
        if rec["k"] == "step":
            row["started"] = rec["ts"]
        else:
            row.update(ended=rec["ts"], status="completed" if rec["k"] == "ok" else "failed")
            row.update(cost=rec.get("cost"), cache=rec.get("cache"))
    for row in rows.values():
        row["replayed"] = row.get("status") == "completed" and row["ended"] < tries[row["run"]]
    return list(rows.values())


def day(ts: float) -> str:
    return datetime.fromtimestamp(ts).date().isoformat()


def percentile(values: list[float], q: float) -> float:
    """percentile_cont: linear interpolation between the closest ranks."""
    values = sorted(values)
    at = q * (len(values) - 1)
    low = int(at)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (at - low)


def by(table: analytics.Table, *keys: str) -> dict[Any, dict[str, Any]]:
    return {tuple(str(r[k]) for k in keys): r for r in table.dicts()}


def test_views_have_the_documented_columns(filled: tuple[Any, Any]) -> None:
    journal, _ = filled
    steps = analytics.select(journal, "SELECT * FROM step_facts LIMIT 1")
    runs = analytics.select(journal, "SELECT * FROM run_facts LIMIT 1")
    assert steps.columns == tuple(n for n, _ in analytics.STEP_COLUMNS)
    assert runs.columns == tuple(n for n, _ in analytics.RUN_COLUMNS)


def test_cost_per_model_per_day(filled: tuple[Any, Any]) -> None:
    journal, records = filled
    want: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0, 0])
    for a in attempts(records):
        if a["cost"]:
            item = want[(day(a["started"]), a["cost"]["model"])]
            item[0] += 1
            item[1] += a["cost"]["usd_micros"] / 1e6
            item[2] += a["cost"]["in"]
            item[3] += a["cost"]["out"]
    got = by(analytics.recipe(journal, "cost_per_model_per_day"), "day", "model")
    assert set(got) == set(want) and len(want) >= 6 * 3
    for key, (calls, usd, tin, tout) in want.items():
        row = got[key]
        assert (row["calls"], row["tokens_in"], row["tokens_out"]) == (calls, tin, tout)
        assert row["cost_usd"] == pytest.approx(usd)


def test_latency_per_step_name(filled: tuple[Any, Any]) -> None:
    journal, records = filled
    durations: dict[str, list[float]] = defaultdict(list)
    for a in attempts(records):
        if "ended" in a and not (a["cache"] and a["cache"]["hit"]):
            durations[a["name"]].append(a["ended"] - a["started"])
    table = analytics.recipe(journal, "latency_per_step")
    got = by(table, "name")
    assert set(got) == {(n,) for n in durations}
    for name, values in durations.items():
        row = got[(name,)]
        assert row["attempts"] == len(values)
        assert row["p50_s"] == pytest.approx(percentile(values, 0.5), abs=1e-6)
        assert row["p95_s"] == pytest.approx(percentile(values, 0.95), abs=1e-6)
        assert row["max_s"] == pytest.approx(max(values), abs=1e-6)
    assert table.rows[0][0] == "summarize"  # the slowest first: its calls take up to 2 s


def test_failure_and_retry_rates(filled: tuple[Any, Any]) -> None:
    journal, records = filled
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    steps: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for a in attempts(records):
        counts[a["name"]][0] += 1
        counts[a["name"]][1] += a["status"] == "failed"
        steps[a["name"]].add((a["run"], a["pos"]))
    got = by(analytics.recipe(journal, "failure_rates"), "name")
    assert sum(f for _, f in counts.values()) > 10
    for name, (n, failed) in counts.items():
        row = got[(name,)]
        retries = n - len(steps[name])
        assert (row["attempts"], row["failed"], row["retries"]) == (n, failed, retries)
        assert row["failure_rate"] == pytest.approx(failed / n)
        assert row["retry_rate"] == pytest.approx(retries / len(steps[name]))


def test_cache_savings(filled: tuple[Any, Any]) -> None:
    journal, records = filled
    notes = [a["cache"] for a in attempts(records) if a["cache"]]
    hits = [c for c in notes if c["hit"]]
    (row,) = analytics.recipe(journal, "cache_savings").dicts()
    assert row["name"] == "embed" and hits
    assert (row["hits"], row["misses"]) == (len(hits), len(notes) - len(hits))
    assert row["saved_usd"] == pytest.approx(sum(c["saved"] for c in hits) / 1e6)
    assert row["hit_rate"] == pytest.approx(len(hits) / len(notes))


def test_runs_per_workflow_and_replayed_steps(filled: tuple[Any, Any]) -> None:
    journal, records = filled
    runs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for rec in records:
        if rec["k"] == "run" and rec["try"] == 1:
            runs[rec["wf"]][0] += 1
        if rec["k"] == "fail":
            runs[next(r["wf"] for r in records if r["k"] == "run" and r["run"] == rec["run"])][
                1
            ] += 1
    got = by(analytics.recipe(journal, "runs_per_workflow"), "workflow")
    assert {k: (v["runs"], v["failed"]) for (k,), v in got.items()} == {
        k: tuple(v) for k, v in runs.items()
    }
    replayed = sum(a["replayed"] for a in attempts(records))
    (count,) = analytics.select(journal, "SELECT count(*) FROM step_facts WHERE replayed").rows
    assert replayed > 0 and count[0] == replayed


def test_since_narrows_every_recipe(filled: tuple[Any, Any]) -> None:
    journal, records = filled
    cut = sorted(r["ts"] for r in records if r["k"] == "step")[-40]
    want = sum(1 for a in attempts(records) if a["started"] >= cut)
    got = analytics.recipe(journal, "daily", since=cut)
    assert sum(r["attempts"] for r in got.dicts()) == want
    summary = analytics.summary(journal, since=cut)
    assert summary.attempts == want and summary.runs < 60


def test_summary_gathers_the_report(filled: tuple[Any, Any]) -> None:
    journal, records = filled
    s = analytics.summary(journal)
    every = attempts(records)
    assert (s.runs, s.attempts) == (60, len(every))
    assert s.failed_attempts == sum(a["status"] == "failed" for a in every)
    assert s.cost_usd == pytest.approx(
        sum(a["cost"]["usd_micros"] for a in every if a["cost"]) / 1e6
    )
    assert len(s.days) == 7 and sum(s.daily_attempts) == len(every)
    assert s.slowest[0]["name"] == "summarize" and s.failures and s.by_workflow_model


def test_unknown_recipe_and_bad_since_say_what_to_do(filled: tuple[Any, Any]) -> None:
    from letitloop.errors import ConfigError

    journal, _ = filled
    with pytest.raises(ConfigError, match="no analytics recipe 'nope'") as info:
        analytics.recipe(journal, "nope")
    assert "cost_per_model_per_day" in str(info.value.fix)
    with pytest.raises(ConfigError, match="neither a duration nor a date"):
        analytics.parse_since("yesterday-ish")
    assert analytics.parse_since("2d", now=1000.0 + 2 * 86400) == 1000.0
