"""The CLI as a surface: ``lil ... --json`` and the tables people read, as real subprocesses.

``read`` takes every listing as JSON and as text (the text's columns parsed back: a run's
status, steps, duration and cost; a notification's state; which markers are in doubt; which
approvals wait), and shows runs in full (``lil runs show --json`` and its header as text).
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.matrix.build import Scenario
from tests.matrix.reading import Reading

MANY = "100000"
RUN_ROW = re.compile(
    r"^(?P<run>\S+)\s+(?P<workflow>\S+)\s+(?P<status>[a-z]+)\s+(?P<steps>\d+/\d+)\s+"
    r"(?P<current>.*?)\s*(?P<duration>-|\d+ms|\d+\.\d[smh])\s+(?P<cost>\$[\d,.]+)\s+"
    r"(?P<holder>\S+)\s+(?P<updated>.+)$"
)
NOTICE_ROW = re.compile(r"^(?P<key>lil-n-\S+)\s+(?P<event>\S+)\s+(?P<run>\S+)\s+(?P<state>\S+)\s")
DOUBT_ROW = re.compile(r"^(?P<run>\S+)\s+(?P<pos>\d+)\s+(?P<marker>\S+)\s+\d+\s+(started|failed)\s")
APPROVAL_ROW = re.compile(r"^(?P<id>[0-9a-f]{6,})\s+(?P<name>\S+)\s+pending\s+(?P<run>\S+)\s")
SHOWN_ROWS = {"status": "status", "steps": "steps", "ran for": "duration", "cost": "cost"}


def lil_json(s: Scenario, *args: str) -> Any:
    return json.loads(s.lil(*args, "--json").stdout)


def run_table(text: str) -> dict[str, dict[str, str]]:
    """``lil runs list``'s rows: run id -> its status, steps, duration and cost columns."""
    rows = {}
    lines = text.splitlines()
    assert lines and lines[0].split()[:2] == ["run", "id"], text[:500]
    for line in lines[1:]:
        m = RUN_ROW.match(line)
        assert m is not None, f"a row of lil runs list that does not parse: {line!r}"
        rows[m["run"]] = {k: m[k] for k in ("status", "steps", "duration", "cost")}
    return rows


def show_header(text: str) -> dict[str, str]:
    """``lil runs show``'s header: status, steps, how long it ran and its cost (money only)."""
    found: dict[str, str] = {"cost": "$0"}
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition("  ")
        if key.strip() in SHOWN_ROWS:
            found[SHOWN_ROWS[key.strip()]] = value.strip().split(" (")[0]
    return found


def read(s: Scenario, shown: list[str]) -> Reading:
    """Everything the CLI lists, and the runs ``shown`` in full (in parallel processes)."""
    jobs: dict[str, Any] = {
        "runs": ("runs", "list", "--limit", MANY, "--json"),
        "doubts": ("effects", "list", "--json"),
        "approvals": ("approvals", "list", "--limit", MANY, "--json"),
        "proposals": ("splice", "list", "--json"),
        "notices": ("notify", "list", "--limit", MANY, "--json"),
        "tasks": ("run", "list", "--json"),
        "runs text": ("runs", "list", "--limit", MANY),
        "notices text": ("notify", "list", "--limit", MANY),
        "doubts text": ("effects", "list"),
        "approvals text": ("approvals", "list", "--limit", MANY),
    }
    for run_id in shown:
        jobs[f"view {run_id}"] = ("runs", "show", run_id, "--json")
        jobs[f"show {run_id}"] = ("runs", "show", run_id)
    with ThreadPoolExecutor(4) as pool:
        said = dict(zip(jobs, pool.map(lambda a: s.lil(*a).stdout, jobs.values()), strict=True))
    notices = [NOTICE_ROW.match(line) for line in said["notices text"].splitlines()[1:]]
    doubts = [DOUBT_ROW.match(line) for line in said["doubts text"].splitlines()[1:]]
    waiting = [APPROVAL_ROW.match(line) for line in said["approvals text"].splitlines()[1:]]
    return Reading(
        runs=json.loads(said["runs"]),
        views={r: json.loads(said[f"view {r}"]) for r in shown},
        doubts=json.loads(said["doubts"]),
        approvals=json.loads(said["approvals"]),
        proposals=json.loads(said["proposals"]),
        notices=json.loads(said["notices"]),
        tasks=json.loads(said["tasks"]),
        table=run_table(said["runs text"]),
        texts={
            "lil notify list's states": {m["key"]: m["state"] for m in notices if m},
            "lil effects list's rows": sorted((m["run"], m["marker"]) for m in doubts if m),
            "lil approvals list's rows": sorted((m["id"], m["run"]) for m in waiting if m),
            "lil runs show's headers": {r: show_header(said[f"show {r}"]) for r in shown},
        },
    )


def expected_texts(truth: Any, shown: list[str]) -> dict[str, Any]:
    """What those texts must say, from the truth."""
    return {
        "lil notify list's states": {n["key"]: n["state"] for n in truth.notices},
        "lil effects list's rows": sorted((d["run_id"], d["marker"]) for d in truth.doubts),
        "lil approvals list's rows": sorted((a["id"], a["run_id"]) for a in truth.approvals),
        "lil runs show's headers": {
            r: {
                "status": truth.views[r]["run"]["status"],
                "steps": truth.views[r]["run"]["shown"]["steps"],
                "duration": truth.views[r]["run"]["shown"]["duration"],
                "cost": truth.views[r]["run"]["shown"]["cost"],
            }
            for r in shown
        },
    }


def acts(s: Scenario, by: str = "matrix:cli") -> dict[str, str]:
    """Every action with ``lil``, as a person types it; what each printed first, normalized."""
    from tests.matrix.acts import BUDGET_USD, CANCELLED, COMPLETED, Targets, expect, normal

    t = Targets("cli")
    greet, bye = t.proposal(s, "greet"), t.proposal(s, "bye")
    steps: dict[str, tuple[str, ...]] = {
        "approve": ("approvals", "approve", t.approval(s.journal, t.approve), "--by", by),
        "resume": ("runs", "resume", t.approve),
        "reject": ("approvals", "reject", t.approval(s.journal, t.reject), "--by", by),
        "cancel": ("runs", "cancel", t.reject, "--reason", "matrix says no", "--by", by),
        "reset": ("runs", "reset", t.reject, "--yes", "--by", by),
        "retry": ("runs", "retry", t.dead, "--by", by),
        "budget": ("runs", "budget", t.dead, "--usd", f"{BUDGET_USD:g}", "--by", by),
        "fork": ("runs", "fork", COMPLETED, "--from", "sum", "--key", "cli", "--by", by),
        "resolve": ("effects", "resolve", t.effect, "send_email", "--done", "--by", by),
        "apply": ("splice", "apply", greet, "--by", by),
        "reject splice": ("splice", "reject", bye, "--by", by),
    }
    said = {}
    for action, args in steps.items():
        lines = s.lil(*args).stdout.strip().splitlines()
        said[action] = lines[-1] if action == "apply" else lines[0]  # the diff comes first
    refused = s.lil("runs", "resume", CANCELLED, check=False)
    assert refused.returncode == 1, refused
    said["refused resume"] = refused.stderr[refused.stderr.index("error: ") :].strip()
    expect(s, "cli", by, set(steps))
    return {
        a: normal(s, text, "cli", by, (greet, bye)) for a, text in said.items() if a != "resume"
    }
