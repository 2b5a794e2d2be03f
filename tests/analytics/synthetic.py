"""A journal's worth of runs made up from records with fixed times, costs and failures: for the
analytics tests (exact answers), the TUI snapshot (stable pictures) and the benchmark (100,000
steps in seconds, through the journal's own batch import rather than 100,000 step calls)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.helpers import wait_until

DAY = 86400.0
START = 1_793_534_400.0  # 2026-11-01 12:00 UTC: noon, so the day is the same in any time zone
NAMES = ("fetch", "summarize", "classify", "embed", "notify")
MODELS = {"summarize": "gpt-4o-mini", "classify": "claude-haiku", "embed": "text-embedding-3"}
WORKFLOWS = ("etl.sync_customer", "etl.nightly", "agents.triage")


@dataclass(frozen=True)
class Shape:
    """How many runs, over how many days, and how often things go wrong."""

    runs: int = 60
    steps: int = 5  # steps per run (one attempt each, plus retries)
    days: int = 6
    retry_every: int = 7  # every n-th step fails once, then succeeds
    fail_every: int = 11  # every n-th run fails for good at its last step
    resume_every: int = 5  # every n-th run is resumed once, halfway
    cache_every: int = 4  # every n-th step of a cached name is a cache hit
    seed: int = 7


def records(shape: Shape = Shape()) -> Iterator[list[dict[str, Any]]]:
    """Each run's records, in the order a real run writes them."""
    rnd = random.Random(shape.seed)
    spacing = shape.days * DAY / max(shape.runs, 1)
    n = 0  # steps so far, across runs
    for i in range(shape.runs):
        run = f"run-{i:06d}"
        wf = WORKFLOWS[i % len(WORKFLOWS)]
        ts = START + i * spacing
        out: list[dict[str, Any]] = [_run(run, wf, 1, ts)]
        failing = shape.fail_every and i % shape.fail_every == shape.fail_every - 1
        resumed = shape.resume_every and i % shape.resume_every == shape.resume_every - 1
        for pos in range(shape.steps):
            name = NAMES[pos % len(NAMES)]
            if resumed and pos == shape.steps // 2:
                ts += 30.0
                out.append(_run(run, wf, 2, ts))
            n += 1
            att = 1
            if shape.retry_every and n % shape.retry_every == 0:
                ts += 0.01
                out.append(_step("step", run, pos, att, name, ts))
                ts += 0.5
                out.append(_step("err", run, pos, att, name, ts, err="builtins.ConnectionError"))
                att += 1
            last = pos == shape.steps - 1
            ts += 0.01
            out.append(_step("step", run, pos, att, name, ts))
            ts += round(0.05 + rnd.random() * (2.0 if name == "summarize" else 0.3), 3)
            if failing and last:
                out.append(_step("err", run, pos, att, name, ts, err="builtins.ValueError"))
                out.append(_fail(run, ts))
                break
            extra: dict[str, Any] = {}
            model = MODELS.get(name)
            hit = name == "embed" and shape.cache_every and n % shape.cache_every == 0
            if model and not hit:
                tin, tout = 100 + n % 50, 20 + n % 10
                extra["cost"] = {"usd_micros": tin * 3 + tout * 5, "in": tin, "out": tout}
                extra["cost"]["model"] = model
            if name == "embed":
                extra["cache"] = {"hit": bool(hit), "saved": 800 if hit else 0}
            out.append(_step("ok", run, pos, att, name, ts, **extra))
        else:
            out.append(_done(run, ts))
        yield out


def _run(run: str, wf: str, tried: int, ts: float) -> dict[str, Any]:
    return {
        "k": "run",
        "run": run,
        "wf": wf,
        "key": run,
        "epoch": 0,
        "try": tried,
        "args": None,
        "entry": None,
        "parent": None,
        "by": "synthetic",
        "ts": ts,
    }


def _step(
    k: str, run: str, pos: int, att: int, name: str, ts: float, err: str | None = None, **extra: Any
) -> dict[str, Any]:
    rec: dict[str, Any] = {"k": k, "run": run, "epoch": 0, "pos": pos, "att": att}
    rec |= {"kind": "step", "name": name, "fp": "f" * 32, "ts": ts}
    if k == "ok":
        rec |= {"codec": "json", "out": b"1", "next": None, **extra}
    elif k == "err":
        rec |= {"err": {"type": err, "message": "made up"}, "codec": None, "out": None}
        rec |= {"next": pos + 1, **extra}
    return rec


def _done(run: str, ts: float) -> dict[str, Any]:
    return {"k": "done", "run": run, "epoch": 0, "codec": "json", "out": b"1", "ts": ts}


def _fail(run: str, ts: float) -> dict[str, Any]:
    err = {"type": "builtins.ValueError", "message": "made up"}
    return {"k": "fail", "run": run, "epoch": 0, "try": 1, "err": err, "ts": ts}


def fill(journal: Any, shape: Shape = Shape(), batch: int = 20_000) -> list[dict[str, Any]]:
    """Import the runs into ``journal`` (batches of about ``batch`` records); returns them all."""
    every: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for run in records(shape):
        pending += run
        if len(pending) >= batch:
            journal.import_records(pending)
            every += pending
            pending = []
            wait_folded(journal)
    if pending:
        journal.import_records(pending)
        every += pending
    wait_folded(journal)
    return every


def wait_folded(journal: Any, timeout: float = 600.0) -> None:
    """Wait until a DuckDB owner has folded its whole log into its tables: its reads wait for
    the fold, within ``LIL_READ_TIMEOUT``, and a run's record folds in ~10 ms on a busy machine
    (its steps in bulk, far faster), so a big import is folded batch by batch."""
    if not hasattr(journal, "stats"):
        return

    def folded() -> bool:
        stats = journal.stats()
        return bool(stats["folded_lsn"] >= stats["log_end"])

    def said() -> str:
        stats = journal.stats()
        return f"the owner to fold its log (folded {stats['folded_lsn']} of {stats['log_end']})"

    wait_until(folded, timeout, what=said, interval=0.2)
