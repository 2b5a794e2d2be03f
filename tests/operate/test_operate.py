"""The operate layer: one rule for each concept every surface shows, on any backend."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from letitloop import atomic_marker, durable, step
from letitloop.errors import ConfigError, LetItLoopError, RunCancelledError
from letitloop.journal import MemoryJournal
from letitloop.operate import (
    actions_for,
    ago,
    check_resumable,
    doubts,
    duration,
    error_line,
    list_summaries,
    money,
    run_view,
    summarize,
)
from tests.helpers import wait_until

BLOCK = threading.Event()  # never set: a blocked step stands for a killed process


def test_one_rule_for_times_money_durations_and_errors() -> None:
    now = 1_000_000.0
    assert ago(now - 90, now) == "1m ago" and ago(now - 150, now) == "2m ago"
    assert ago(now - 0.2, now) == "just now" and ago(now - 7200, now) == "2h ago"
    assert ago(None) == "-" and ago(now + 5, now) == "in the future"
    assert money(0) == "$0" and money(4200) == "$0.0042" and money(42) == "$0.000042"
    assert money(50_000) == "$0.05" and money(500_000) == "$0.50" and money(-4200) == "-$0.0042"
    assert money(12_350_000) == "$12.35" and money(1_234_500_000) == "$1,234.50"
    assert duration(0.046) == "46ms" and duration(1.5) == "1.5s" and duration(150) == "2.5m"
    assert duration(None) == "-"
    assert error_line({"type": "builtins.KeyError", "message": "'x'\nmore"}) == "KeyError: 'x'"
    assert error_line(None) == ""


def _killed_inside(journal: Any, run_id: str, fn: Any) -> None:
    """Run ``fn`` until it blocks inside a step, then drop its lease as if its process had been
    SIGKILLed there (the thread stays blocked: nothing after that point is journaled)."""
    threading.Thread(target=fn, daemon=True).start()

    def inside() -> bool:
        try:
            attempts = journal.get_run(run_id).attempts
        except LetItLoopError:
            attempts = []
        return any(a.status == "started" for a in attempts)

    wait_until(inside, 20, what=f"{run_id} to block inside a step", interval=0.01)
    journal.release_run(run_id)


def _scenario(journal: Any) -> None:
    @durable(journal=journal, name="ok", run_id="a")
    def ok() -> int:
        return int(step("one", lambda: 1)) + int(step("two", lambda: 2))

    ok()

    @durable(journal=journal, name="effect", run_id="b")
    def effect() -> None:
        step("prepare", lambda: None)
        with atomic_marker("send") as go:
            if go:
                BLOCK.wait(120)

    _killed_inside(journal, "effect:b", effect)


def test_summaries_count_steps_and_time_of_attempts_that_ended() -> None:
    journal = MemoryJournal()
    _scenario(journal)
    [b, a] = list_summaries(journal)
    assert (b.run_id, b.status) == ("effect:b", "interrupted")
    assert (a.run_id, a.status, a.steps_done, a.steps_total) == ("ok:a", "completed", 2, 2)
    assert a.seconds is not None and a.seconds < 1.0
    assert actions_for(a) == ("fork",)  # a completed run: not resumed, cancelled or reset
    time.sleep(0.3)
    view = run_view(journal, "effect:b")
    [send] = [s for s in view.steps if s.name == "send"]
    assert send.seconds is None  # killed inside: never "running until now"
    assert view.run.seconds is not None and view.run.seconds < 0.3


def test_markers_in_doubt_one_rule() -> None:
    journal = MemoryJournal()
    _scenario(journal)
    found = doubts(journal)
    assert [(d.run_id, d.marker, d.status) for d in found] == [("effect:b", "send", "started")]
    assert found[0].command("done") == "lil effects resolve effect:b send --done"
    assert doubts(journal, "ok:a") == []


def test_a_cancelled_run_is_refused_for_resume_with_its_cause() -> None:
    journal = MemoryJournal()
    _scenario(journal)
    journal.cancel_run("effect:b", "ana", "wrong customer")
    summary = summarize(journal.get_run("effect:b").run)
    assert "resume" not in summary.actions and "reset" in summary.actions
    with pytest.raises(RunCancelledError) as info:
        check_resumable(journal, "effect:b")
    assert "cancelled by ana: wrong customer" in info.value.message
    assert info.value.fix is not None and "lil runs reset effect:b" in info.value.fix
    with pytest.raises(ConfigError, match="already completed"):
        check_resumable(journal, "ok:a")


def test_a_listing_says_what_a_fork_was_forked_from() -> None:
    from letitloop.operate import fork

    journal = MemoryJournal()
    _scenario(journal)
    made = fork(journal, "ok:a", 1, by="ana", key="try")
    listed = {s.run_id: s for s in list_summaries(journal)}
    origin = listed[made.data["fork"]].forked_from
    assert origin is not None and (origin.run_id, origin.position) == ("ok:a", 1)
    assert listed["ok:a"].forked_from is None


def test_a_listing_and_a_run_view_count_the_same_steps(backend_journal: Any) -> None:
    """Steps done out of known: the listing reads the journal's count of positions reached,
    the run view counts its attempts; a run that failed outside any step counts 2 of 2 in both
    (the listing's guess said 2 of 3)."""

    @durable(journal=backend_journal, name="outside", run_id="o1")
    def outside() -> None:
        step("one", lambda: 1)
        step("two", lambda: 2)
        raise ValueError("after the steps")

    @durable(journal=backend_journal, name="inside", run_id="i1")
    def inside() -> None:
        step("one", lambda: 1)
        step("two", lambda: 1 / 0)

    for flow in (outside, inside):
        with pytest.raises((ValueError, ZeroDivisionError)):
            flow()
    listed = {s.run_id: (s.steps_done, s.steps_total) for s in list_summaries(backend_journal)}
    assert listed == {"outside:o1": (2, 2), "inside:i1": (1, 2)}
    for run_id, counts in listed.items():
        view = run_view(backend_journal, run_id)
        assert (view.run.steps_done, view.run.steps_total) == counts


def test_the_resolve_command_is_safe_to_paste_in_a_shell() -> None:
    import shlex

    from letitloop.operate import Doubt

    d = Doubt("wf:a;rm -rf ~", "interrupted", 1, "send $(mail)", 1, "started", None, "", None, "")
    d = d._replace(ref=d.marker)
    assert shlex.split(d.command("done"))[3:5] == ["wf:a;rm -rf ~", "send $(mail)"]
