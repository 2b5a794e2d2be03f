"""Replay semantics of @durable and step(), on both journal backends."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from letitloop import durable, step
from letitloop.errors import (
    ConfigError,
    NonDeterminismError,
    NotInDurableContextError,
    ReplayedStepError,
    RunArgumentsError,
    UnencodableError,
)


class Boom(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class User:
    id: int
    name: str
    seen: dt.datetime


def test_completed_steps_replay_without_running(any_journal) -> None:
    calls: list[str] = []
    fail = {"at": "b"}

    def work(name: str) -> str:
        calls.append(name)
        if fail["at"] == name:
            raise Boom(name)
        return name.upper()

    @durable(journal=any_journal, run_id="r1")
    def flow() -> list[str]:
        return [step(n, work, n) for n in ("a", "b", "c")]

    with pytest.raises(Boom):
        flow()
    assert calls == ["a", "b"]
    run = any_journal.list_runs()[0]
    assert run.status == "failed" and run.steps_done == 1
    assert run.error is not None and run.error["type"].endswith("Boom")
    fail["at"] = ""
    assert flow() == ["A", "B", "C"]
    assert calls == ["a", "b", "b", "c"]  # a replayed; the failed step ran again as attempt 2
    detail = any_journal.get_run(run.run_id)
    assert [(a.name, a.attempt, a.status) for a in detail.attempts] == [
        ("a", 1, "completed"),
        ("b", 1, "failed"),
        ("b", 2, "completed"),
        ("c", 1, "completed"),
    ]


def test_completed_run_returns_stored_result_without_executing(any_journal) -> None:
    body_runs = []

    @durable(journal=any_journal)
    def flow(x: int) -> dict[str, int]:
        body_runs.append(x)
        return {"double": step("double", lambda v: v * 2, x)}

    assert flow(21) == {"double": 42}
    assert flow(21) == {"double": 42}
    assert body_runs == [21]


def test_different_arguments_make_different_runs(any_journal) -> None:
    @durable(journal=any_journal)
    def flow(x: int) -> int:
        return step("inc", lambda v: v + 1, x)

    assert (flow(1), flow(2), flow(1)) == (2, 3, 2)
    runs = any_journal.list_runs()
    assert len(runs) == 2 and {r.status for r in runs} == {"completed"}
    assert all(r.run_id.startswith(r.workflow + ":") for r in runs)


def test_goal_id_and_run_id_fix_the_run(any_journal) -> None:
    @durable(journal=any_journal, goal_id="customer_sync")
    def flow(x: int) -> int:
        return step("id", lambda v: v, x)

    assert flow(1) == 1
    with pytest.raises(RunArgumentsError):  # same goal, other arguments: never the old result
        flow(2)
    assert any_journal.list_runs()[0].key == "customer_sync"
    flow_name = any_journal.list_runs()[0].workflow

    @durable(journal=any_journal, goal_id="customer_sync", ignore_args=True, name=flow_name)
    def once(x: int) -> int:
        return step("id", lambda v: v, x)

    assert once(2) == 1  # "same id, one result", asked for explicitly
    with pytest.raises(ConfigError, match="both run_id and goal_id"):
        durable(run_id="a", goal_id="b")


def _interrupted_flow(journal, names, args):  # type: ignore[no-untyped-def]
    """Run steps then fail, so the run is unfinished and the next call replays."""
    state = {"fail": True}

    @durable(journal=journal, run_id="nd", name="nd_flow")
    def flow() -> list[object]:
        out = [step(n, lambda a: a, a) for n, a in zip(names, args, strict=True)]
        if state["fail"]:
            raise Boom("stop here")
        return out

    with pytest.raises(Boom):
        flow()
    state["fail"] = False
    return flow


def test_renamed_step_is_detected(any_journal) -> None:
    names = ["fetch", "summarize"]
    flow = _interrupted_flow(any_journal, names, [1, 2])
    names[1] = "summarise"
    with pytest.raises(NonDeterminismError) as err:
        flow()
    e = err.value
    assert e.position == 1 and e.step == "summarise" and e.run_id == "nd_flow:nd"
    assert "'summarize'" in str(e) and "'summarise'" in str(e) and "lil runs reset" in str(e)


def test_reordered_steps_are_detected(any_journal) -> None:
    names = ["a", "b"]
    flow = _interrupted_flow(any_journal, names, [1, 2])
    names.reverse()
    with pytest.raises(NonDeterminismError, match="position 0"):
        flow()


def test_changed_step_argument_is_detected(any_journal) -> None:
    args = [1, 2]
    flow = _interrupted_flow(any_journal, ["a", "b"], args)
    args[1] = 3
    with pytest.raises(NonDeterminismError, match="different arguments"):
        flow()


def test_loops_with_repeated_names_replay_by_position(any_journal) -> None:
    calls = []
    state = {"fail": True}

    @durable(journal=any_journal, run_id="loop")
    def flow() -> list[int]:
        out = []
        for i in range(5):
            out.append(step("item", lambda v: calls.append(v) or v * v, i))
        if state["fail"]:
            raise Boom()
        return out

    with pytest.raises(Boom):
        flow()
    state["fail"] = False
    assert flow() == [0, 1, 4, 9, 16]
    assert calls == [0, 1, 2, 3, 4]


def test_failure_the_run_went_past_is_replayed_not_rerun(any_journal) -> None:
    calls = []
    state = {"fail": True}

    def flaky() -> int:
        calls.append(1)
        raise Boom("flaky")

    @durable(journal=any_journal, run_id="past")
    def flow() -> str:
        try:
            step("flaky", flaky)
        except Boom:
            pass
        step("after", lambda: "ok")
        if state["fail"]:
            raise RuntimeError("crash later")
        return "done"

    with pytest.raises(RuntimeError):
        flow()
    state["fail"] = False
    assert flow() == "done"
    assert calls == [1]  # the caught failure was replayed, so the path stays the same


def test_replayed_failure_without_pickle_is_described(any_journal) -> None:
    state = {"fail": True}

    @durable(journal=any_journal, run_id="desc", allow_pickle=False)
    def flow() -> str:
        try:
            step("flaky", lambda: (_ for _ in ()).throw(Boom("no")))
        except (Boom, ReplayedStepError) as exc:
            caught.append(type(exc))
        if state["fail"]:
            raise RuntimeError
        return "done"

    caught: list[type] = []
    with pytest.raises(RuntimeError):
        flow()
    state["fail"] = False
    assert flow() == "done"
    # with pickle disabled the exception cannot be rebuilt: it comes back described
    assert caught[0] is Boom and caught[1] in (Boom, ReplayedStepError)


def test_rich_outputs_round_trip(any_journal) -> None:
    seen = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    calls = []
    state = {"fail": True}

    @durable(journal=any_journal, run_id="rich")
    def flow() -> tuple[User, bytes, set[int]]:
        u = step("user", lambda: calls.append(1) or User(1, "Ada", seen))
        b = step("blob", lambda: bytes(range(256)))
        s = step("set", lambda: {3, 1, 2})
        if state["fail"]:
            raise Boom()
        return u, b, s

    with pytest.raises(Boom):
        flow()
    state["fail"] = False
    assert flow() == (User(1, "Ada", seen), bytes(range(256)), {1, 2, 3})
    assert calls == [1]
    assert flow() == (User(1, "Ada", seen), bytes(range(256)), {1, 2, 3})  # from the result


def test_unencodable_output_names_step_type_and_fix_and_records_nothing(any_journal) -> None:
    import threading

    @durable(journal=any_journal, run_id="bad", allow_pickle=False)
    def flow() -> object:
        return step("lock", threading.Lock)

    with pytest.raises(UnencodableError) as err:
        flow()
    e = err.value
    assert e.step == "lock" and e.position == 0
    assert "lock" in str(e).lower() and e.fix
    run = any_journal.get_run(any_journal.list_runs()[0].run_id)
    assert [a.status for a in run.attempts] == ["started"]  # no half-written output
    assert run.run.status == "failed"


def test_step_outside_durable_is_a_clear_error() -> None:
    with pytest.raises(NotInDurableContextError, match="@durable"):
        step("x", lambda: 1)


def test_step_name_must_be_a_string(any_journal) -> None:
    @durable(journal=any_journal)
    def flow() -> int:
        return step(42, lambda: 1)  # type: ignore[arg-type]

    with pytest.raises(ConfigError, match="non-empty string"):
        flow()


def test_nested_durable_call_is_a_child_run(any_journal) -> None:
    calls = []
    state = {"fail": True}

    @durable(journal=any_journal)
    def child(x: int) -> int:
        return step("square", lambda v: calls.append(v) or v * v, x)

    @durable(journal=any_journal, run_id="parent")
    def parent() -> list[int]:
        out = [child(2), child(3)]
        if state["fail"]:
            raise Boom()
        return out

    with pytest.raises(Boom):
        parent()
    state["fail"] = False
    assert parent() == [4, 9]
    assert calls == [2, 3]
    runs = {r.run_id: r for r in any_journal.list_runs()}
    children = [r for r in runs.values() if r.parent]
    assert len(children) == 2 and all(r.parent.endswith(":parent") for r in children)
    assert all(r.status == "completed" for r in children)


def test_reset_starts_over(any_journal) -> None:
    calls = []

    @durable(journal=any_journal, run_id="again")
    def flow() -> int:
        return step("one", lambda: calls.append(1) or len(calls))

    assert flow() == 1
    any_journal.reset_run(any_journal.find_run("again"), by="test")
    assert flow() == 2
    assert calls == [1, 1]
