"""The truth every surface is held to: ``letitloop.operate`` on the test's own journal handle,
in the one JSON shape per record, and a comparison that says exactly where a surface differs.

``read_truth`` reads the runs (and each run's full view), the side effects in doubt, the
approvals waiting, the splice proposals, the notifications and the task runs. ``same`` compares
a surface's answer with it and fails with the first differing paths. ``facts`` is what the
matrix names for a run (status, steps done/known, how long it ran, what it cost, approvals
waiting, fork origin, actions), as data and as every surface writes it (``shown``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

HUGE = 1 << 30


@dataclass
class Truth:
    """What operate says about the journal, in the JSON shapes every surface writes."""

    runs: list[dict[str, Any]]  # operate.run_json, newest first
    views: dict[str, dict[str, Any]]  # run id -> operate.view_json
    doubts: list[dict[str, Any]]
    approvals: list[dict[str, Any]]  # pending, oldest first
    proposals: list[dict[str, Any]]
    notices: list[dict[str, Any]]
    tasks: list[dict[str, Any]]  # the task runs' summaries (operate.run_json)

    def run(self, run_id: str) -> dict[str, Any]:
        return next(r for r in self.runs if r["run_id"] == run_id)

    @property
    def ids(self) -> list[str]:
        return [r["run_id"] for r in self.runs]


def as_json(value: Any) -> Any:
    """``value`` as a JSON surface carries it (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, default=str))


def read_truth(journal: Any) -> Truth:
    from letitloop import operate

    runs = operate.list_summaries(journal, limit=HUGE)
    views = {r.run_id: operate.view_json(operate.run_view(journal, r.run_id)) for r in runs}
    pending = journal.approvals(status="pending", limit=HUGE)
    return Truth(
        runs=as_json([operate.run_json(r) for r in runs]),
        views=as_json(views),
        doubts=as_json([operate.doubt_json(d) for d in operate.doubts(journal)]),
        approvals=as_json(
            [operate.approval_json(a) for a in sorted(pending, key=lambda a: (a.created, a.id))]
        ),
        proposals=as_json([operate.proposal_json(p) for p in journal.proposals()]),
        notices=as_json([operate.notice_json(n) for n in journal.notifications(limit=HUGE)]),
        tasks=as_json(
            [
                operate.run_json(r)
                for r in operate.list_summaries(journal, workflow="lil.task", limit=HUGE)
            ]
        ),
    )


def facts(run: dict[str, Any]) -> dict[str, Any]:
    """What the matrix compares of a run, from its JSON (``operate.run_json``)."""
    origin = run.get("forked_from")
    shown = run.get("shown") or {}
    return {
        "status": run.get("status"),
        "steps": (run.get("steps_done"), run.get("steps_total")),
        "seconds": run.get("seconds"),
        "cost_micros": run.get("cost_micros"),
        "waiting": run.get("waiting"),
        "forked_from": None if origin is None else (origin["run_id"], origin["position"]),
        "actions": list(run.get("actions") or ()),
        "shown": {k: shown.get(k) for k in ("steps", "duration", "cost", "budget")},
    }


def task_facts(run: dict[str, Any]) -> dict[str, Any]:
    """What the matrix compares of a task run (a run of ``lil.task``; the task runner says a
    suspended task is ``waiting`` for review), from operate's run JSON or the runner's row."""
    from letitloop.tasks._report import task_status

    return {
        "run_id": run["run_id"],
        "status": task_status(run["status"]),
        "steps": (run.get("steps_done"), run.get("steps_total")),
        "seconds": run.get("seconds"),
        "shown": {k: (run.get("shown") or {}).get(k) for k in ("steps", "duration", "cost")},
    }


def without(value: Any, *keys: str) -> Any:
    """A copy of JSON data without ``keys`` at any depth (what a surface may cut or add)."""
    if isinstance(value, dict):
        return {k: without(v, *keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [without(v, *keys) for v in value]
    return value


def differences(expected: Any, got: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as ``path: expected != got`` lines."""
    if isinstance(expected, dict) and isinstance(got, dict):
        found = []
        for key in list(expected) + [k for k in got if k not in expected]:
            if key not in got:
                found.append(f"{path}.{key}: missing (expected {_short(expected[key])})")
            elif key not in expected:
                found.append(f"{path}.{key}: not expected ({_short(got[key])})")
            else:
                found += differences(expected[key], got[key], f"{path}.{key}")
        return found
    if isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            return [f"{path}: {len(expected)} items expected, {len(got)} got: {_short(got)}"]
        return [
            d
            for i, (e, g) in enumerate(zip(expected, got, strict=True))
            for d in differences(e, g, f"{path}[{i}]")
        ]
    return [] if expected == got else [f"{path}: {_short(expected)} != {_short(got)}"]


def same(surface: str, what: str, expected: Any, got: Any) -> None:
    """Fail, naming the surface and the first differing paths, unless ``got == expected``."""
    found = differences(as_json(expected), as_json(got))
    if found:
        shown = "\n  ".join(found[:25])
        more = f"\n  ... and {len(found) - 25} more" if len(found) > 25 else ""
        raise AssertionError(f"{surface} disagrees with operate on {what}:\n  {shown}{more}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def check_truth(truth: Truth) -> None:
    """operate agrees with itself: a run listed (``list_summaries``) has the facts it has when
    shown in full (``run_view``), which every surface's list and run page rely on."""
    same(
        "operate's run list",
        "the facts of each run shown in full (operate.run_view)",
        {run_id: facts(view["run"]) for run_id, view in truth.views.items()},
        {r["run_id"]: facts(r) for r in truth.runs},
    )
