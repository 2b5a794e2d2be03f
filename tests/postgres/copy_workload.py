"""A journal of real runs for the copy tests, and a backend-neutral snapshot to compare copies.

``fill(spec, tmp)`` runs, against the journal ``spec`` (a path or a postgresql:// URL): a
completed pipeline (one output over the 64 KB inline limit, a datetime), a failed run, a run
SIGKILLed inside its marker block (in a subprocess) and then resolved, an approval decided and
one still pending, a budget, a cached step, a run reset and run again, a splice proposal and a
LangGraph thread stopped at its interrupt. ``snapshot(journal)`` reads everything the surfaces
show (``lil runs list --json``, ``lil runs show --json`` per run, every attempt's output,
approvals, checkpoints, cache, proposals, events without their journal-specific seq).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from letitloop import approval, durable, step
from letitloop.errors import ApprovalPending, Suspended
from letitloop.journal._contract import Journal, Proposal
from tests.helpers import ROOT, child_env, lil_json

BIG = "x" * (100 * 1024)


@dataclass(frozen=True)
class Draft:
    """A step output kept as an authenticated class reference: it loads only with the key."""

    title: str


def _work(label: str) -> Any:
    return {"label": label, "at": dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)}


def fill(spec: str, tmp: Path, journal: Journal) -> None:
    """Write the runs listed in the module docstring to ``spec`` (``journal`` is it, opened)."""

    @durable(journal=spec, name="copy.pipeline", run_id="p1")
    def pipeline() -> int:
        step("fetch", _work, "fetch")
        step("big", lambda: BIG)
        step("cached", lambda: 7, cache=True)
        return 3

    @durable(journal=spec, name="copy.failing", run_id="f1")
    def failing() -> None:
        step("load", lambda: "loaded")
        step("divide", lambda: 1 / 0)

    @durable(journal=spec, name="copy.approve", run_id="a{n}")
    def approve(n: int) -> str:
        draft = step("draft", lambda: {"title": f"post {n}"})
        step("typed", Draft, f"post {n}")
        d = approval("publish", draft, wait=False)
        return "published" if d.approved else "dropped"

    assert pipeline() == 3
    try:
        failing()
    except ZeroDivisionError:
        pass
    for n in (1, 2):
        try:
            approve(n)
        except (ApprovalPending, Suspended):
            pass
    pending = journal.approvals(status="pending")
    decided = next(a for a in pending if a.payload == {"title": "post 1"})
    journal.decide_approval(decided.id, approved=True, by="ann@host", comment="ok")
    journal.set_budget("copy.approve:a1", "ann@host", usd_micros=5_000_000, tokens=10_000)
    journal.reset_run("copy.pipeline:p1", "bob@host")
    assert pipeline() == 3  # epoch 1: the cached step is a cache hit now

    sent = tmp / "sent.txt"
    script = ROOT / "tests" / "cli" / "cli_workflows.py"
    killed = subprocess.run(
        [sys.executable, str(script), spec, str(sent)], env=child_env(), timeout=120, check=False
    )
    assert killed.returncode == -9, killed
    run_id = journal.find_run("order-1")
    journal.resolve_marker(run_id, "send_email", "done", "carol@host")

    journal.propose(
        Proposal(
            id="prop-1",
            path="src/app.py",
            target="handler",
            code="def handler():\n    return 2\n",
            reason="fix the off-by-one",
            by="agent@host",
            created=1_780_000_000.0,
            base="0" * 64,
            old="def handler():\n    return 1\n",
            origin="p1",
            state="pending",
        )
    )

    from letitloop.adapters.langgraph import LetItLoopCheckpointSaver
    from tests.adapters.lg_pipeline import build

    saver = LetItLoopCheckpointSaver(journal, graph="pipeline")
    app = build(saver, tmp / "lg.log")
    app.invoke({"items": []}, {"configurable": {"thread_id": "t1"}})


def _scrub(data: Any) -> Any:
    """Drop what names the journal itself (its location) from CLI output."""
    if isinstance(data, dict):
        return {k: _scrub(v) for k, v in data.items() if k not in ("journal", "location")}
    if isinstance(data, list):
        return [_scrub(v) for v in data]
    return data


def snapshot(spec: str, journal: Journal) -> dict[str, Any]:
    """Everything a person or a surface can see of the journal, independent of its backend."""
    runs = lil_json("runs", "list", "--limit", "1000", "--journal", spec, "--json")
    shown = {
        r["run_id"]: _scrub(lil_json("runs", "show", r["run_id"], "--journal", spec, "--json"))
        for r in runs
    }
    outputs = {}
    for info in journal.list_runs(limit=1000):
        detail = journal.get_run(info.run_id)
        for a in detail.attempts:
            if a.codec is not None and a.kind != "checkpoint":
                key = f"{info.run_id}/{info.epoch}/{a.position}/{a.attempt}"
                outputs[key] = journal.get_output(info.run_id, info.epoch, a.position, a.attempt)
        outputs[f"{info.run_id}/result"] = detail.result
        outputs[f"{info.run_id}/args"] = detail.args
    events = [
        (e.run_id, e.kind, e.position, e.attempt, e.name, e.ts, json.dumps(e.data, sort_keys=True))
        for e in journal.events(limit=100_000)
    ]
    return {
        "runs": _scrub(runs),
        "shown": shown,
        "outputs": outputs,
        "approvals": [a._asdict() for a in journal.approvals(limit=1000)],
        "checkpoints": [c._asdict() for c in journal.checkpoints()],
        "cache": [c._asdict() for c in journal.cache_list()],
        "proposals": [p._asdict() for p in journal.proposals()],
        "events": events,
    }
