"""The judge on hand-made server logs: acknowledged vs in flight, duplicates, a person again."""

from __future__ import annotations

from typing import Any

from letitloop.bench._faults import Fault
from letitloop.bench._judge import Order, judge_fault
from letitloop.bench._scenario import _fanout, _tool

PLAN = _tool(None, {"actions": ["think", "pay alice 40"]})  # type: ignore[arg-type]


def call(key: str, t0: float, t1: float | None) -> dict[str, Any]:
    lane, seq = key.split("/")
    return {
        "kind": "call",
        "key": key,
        "lane": lane,
        "seq": int(seq),
        "pid": 1,
        "t_recv": t0,
        "t_resp": t1,
        "in": 10,
        "out": 5,
    }


def effect(key: str, t0: float) -> dict[str, Any]:
    e = call(key, t0, t0)
    e.update(kind="effect", memo="m", detail="{}")
    return e


def judged(events: list[dict[str, Any]], at: float, plan: Any = PLAN) -> dict[str, Any]:
    from letitloop.bench._trial import Injected

    hit = Injected(Fault("sigkill", 0.0, 0), 3, at, restarted=at + 1)
    return judge_fault(hit, float("inf"), events, Order(plan), None)


def test_a_resume_that_repeats_only_the_call_in_flight() -> None:
    before = [call("main/0", 0, 1), call("main/2", 2, 3), call("main/4", 4, None)]
    after = [call("main/4", 11, 12), effect("main/5", 13), call("main/6", 14, 15)]
    f = judged(before + after, at=5)
    assert f["in_flight"] == ["main/4"]
    assert (f["lost"], f["rerun_calls"], f["rerun_inflight"], f["duplicate_effects"]) == (
        0,
        1,
        1,
        0,
    )
    assert f["recovery_ms"] == 5_000.0  # restarted at 6, asked for main/4 again at 11


def test_a_restart_from_scratch_loses_what_was_acknowledged() -> None:
    before = [
        call("main/0", 0, 1),
        call("main/2", 2, 3),
        effect("main/3", 3.5),
        call("main/4", 4, 4.5),
    ]
    after = [call("main/0", 11, 12), call("main/2", 12, 13), effect("main/3", 13.5)]
    f = judged(before + after, at=5)
    # main/4 was answered but the run had not moved past it: it is the in-flight call
    assert f["acknowledged"] == 3 and f["lost_keys"] == ["main/0", "main/2"]
    assert f["duplicate_effects"] == 1 and f["lost_tokens"] == 30


def test_fanout_items_are_acknowledged_by_the_reduce_not_by_each_other() -> None:
    plan = _fanout(3, 3)
    before = [call("main/0", 0, 1), call("item-0/0", 2, 3), call("item-1/0", 2, 4)]
    after = [call("item-0/0", 11, 12), call("item-1/0", 11, 12), call("main/0", 13, 14)]
    f = judged(before + after, at=5, plan=plan)
    assert f["lost_keys"] == ["main/0"]  # the items came after it
    assert f["rerun_inflight"] == 2  # the reduce had not started: the items were in flight


def test_a_question_asked_again_is_a_person_made_to_act() -> None:
    ask = call("main/3", 1, 1)
    ask["kind"] = "ask"
    again = dict(ask, t_recv=12, t_resp=12)
    f = judged([call("main/0", 0, 0.5), ask, again], at=5)
    assert f["person"] == ["answer the same question again"]
