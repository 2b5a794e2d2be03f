"""The judge: what each fault cost, from the counter server's log alone.

At the moment T of a fault, every request the run had made is *completed* (its response was
sent before T) or *in flight*. A completed request is *acknowledged* when the run had moved past
it before T: it made a request that comes later in the plan (a later call of the same agent,
the next agent of a handoff, the fan-out's items after the call that decided them, the reduce
after the items; see ``Order``). After T, until the
next fault, a request for a key seen before T is *run again*: a model call (its tokens are the
prompt's and the reply's words) or a side effect (a duplicate). A re-run of acknowledged work is
*work lost*; a re-run of a request in flight, or completed but not yet acknowledged, is the
price every durable engine pays, the in-flight call. A question a person had already answered,
asked again, is a person made to act again; so is every command the framework told the person
to run. Recovery is the time from the worker's restart to its first request for work not done
before T (or its answer, when nothing was left to do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from letitloop.bench._trial import Injected, TrialResult


class Order:
    """Where each request stands in the plan: its lane and sequence number, a fan-out item
    standing at its fan-out's place (so items come after the call that decided them and before
    the reduce, and not before or after each other); lanes follow the plan's order."""

    def __init__(self, plan: Sequence[dict[str, Any]]) -> None:
        lanes: list[str] = []
        self.items: dict[str, tuple[str, int]] = {}
        for op in plan:
            if op["lane"] not in lanes:
                lanes.append(op["lane"])
            if op["op"] == "fanout":
                for i in range(int(op["items"])):
                    self.items[f"item-{i}"] = (op["lane"], int(op["seq"]))
        self.rank = {lane: i for i, lane in enumerate(lanes)}

    def place(self, e: dict[str, Any]) -> tuple[int, int]:
        lane, seq = self.items.get(e["lane"], (e["lane"], e["seq"]))
        return self.rank.get(lane, len(self.rank)), int(seq)

    def moved_past(self, r: dict[str, Any], e: dict[str, Any]) -> bool:
        """Request ``r`` comes after ``e`` in the plan."""
        return self.place(r) > self.place(e)


def summarize_clean(events: Sequence[dict[str, Any]], answer: str | None) -> dict[str, Any]:
    """A clean run's totals: requests, calls, tokens, effects and the answer."""
    calls = [e for e in events if e["kind"] == "call"]
    effects = [e for e in events if e["kind"] == "effect"]
    return {
        "requests": len(events),
        "calls": len(calls),
        "tokens": sum(e["in"] + e["out"] for e in calls),
        "effects": len(effects),
        "effect_memos": sorted(f"{e['key']}={e['memo']}" for e in effects),
        "asks": sum(1 for e in events if e["kind"] == "ask"),
        "answer": answer,
    }


def judge_fault(
    hit: Injected,
    until: float,
    events: Sequence[dict[str, Any]],
    order: Order,
    answered_at: float | None,
) -> dict[str, Any]:
    """One fault's figures (see the module docstring)."""
    t = hit.at
    before = [e for e in events if e["t_recv"] < t]
    done = {e["key"]: e for e in before if e["t_resp"] is not None and e["t_resp"] <= t}
    flight = {e["key"] for e in before if e["t_resp"] is None or e["t_resp"] > t}
    flight -= set(done)
    acked = set()
    for key, e in done.items():
        if any(r["t_recv"] > e["t_resp"] and order.moved_past(r, e) for r in before):
            acked.add(key)
    after = [e for e in events if t <= e["t_recv"] < until]
    seen = set(done) | flight
    asked = {e["key"] for e in before if e["kind"] == "ask"}
    rerun_calls = rerun_tokens = lost_tokens = inflight_calls = dups = asked_again = 0
    lost: set[str] = set()
    progress_at = None
    for e in after:
        key = e["key"]
        if key not in seen:
            if progress_at is None:
                progress_at = e["t_recv"]
            continue
        if e["kind"] == "effect":
            dups += 1
            continue
        if e["kind"] == "ask":
            asked_again += 1 if key in asked else 0
            continue
        rerun_calls += 1
        rerun_tokens += e["in"] + e["out"]
        if key in acked:
            lost.add(key)
            lost_tokens += e["in"] + e["out"]
        else:
            inflight_calls += 1
        if progress_at is None and key in flight:
            progress_at = e["t_recv"]
    if progress_at is None and answered_at is not None and t <= answered_at < until:
        progress_at = answered_at
    restart = hit.restarted
    recovery = None
    if restart is not None and progress_at is not None:
        recovery = max(0.0, progress_at - restart) * 1000
    person = [a.get("ran") or a.get("told") for a in hit.person]
    person += ["answer the same question again"] * asked_again
    return {
        "kind": hit.fault.kind,
        "where": hit.fault.describe(hit.k),
        "exit": hit.exit,
        "in_flight": sorted(flight),
        "acknowledged": len(acked),
        "lost": len(lost),
        "lost_keys": sorted(lost),
        "lost_tokens": lost_tokens,
        "rerun_calls": rerun_calls,
        "rerun_inflight": inflight_calls,
        "rerun_tokens": rerun_tokens,
        "duplicate_effects": dups,
        "recovery_ms": None if recovery is None else round(recovery, 1),
        "person": person,
    }


def judge_trial(
    trial: TrialResult,
    events: Sequence[dict[str, Any]],
    answer: str | None,
    answered_at: float | None,
    clean: dict[str, Any],
    plan: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """A trial's faults, each judged, and whether it ended right."""
    order = Order(plan)
    faults = []
    for i, hit in enumerate(trial.injected):
        until = trial.injected[i + 1].at if i + 1 < len(trial.injected) else float("inf")
        faults.append(judge_fault(hit, until, events, order, answered_at))
    effects = [e for e in events if e["kind"] == "effect"]
    applied: dict[str, int] = {}
    for e in effects:
        applied[e["key"]] = applied.get(e["key"], 0) + 1
    memos = sorted({f"{e['key']}={e['memo']}" for e in effects})
    return {
        "run": trial.run_id,
        "finished": trial.finished,
        "right_answer": trial.finished and answer is not None and answer == clean["answer"],
        "effects_right": memos == sorted(set(clean["effect_memos"])),
        "duplicate_effects": sum(n - 1 for n in applied.values()),
        "calls": sum(1 for e in events if e["kind"] == "call"),
        "tokens": sum(e["in"] + e["out"] for e in events if e["kind"] == "call"),
        "restarts": len(trial.spawns) - 1,
        "faults": faults,
        "person": trial.person,
        "errors": trial.errors,
        "wall_s": round(trial.wall_s, 2),
    }
