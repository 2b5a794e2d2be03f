"""Replay does no more work than it must: a resume fetches the run's steps once, decodes each
replayed output once, and runs no replayed step function again (issue #21, in-process resume).

Real journals throughout: the in-memory twin, the DuckDB owner process and PostgreSQL
(``any_journal``); the counts come from wrapping the real functions, not from timing.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from letitloop import durable, step
from letitloop.journal import _contract
from letitloop.kernel import _codec, _context
from letitloop.kernel._errors import NonDeterminismError, RunArgumentsError

N = 120


def _counting_open_run(journal: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, int]]:
    """Wrap the journal's open_run: each call's (lease, number of steps in its answer)."""
    calls: list[tuple[bool, int]] = []
    real = journal.open_run

    def open_run(**kw: Any) -> _contract.RunState:
        state = real(**kw)
        calls.append((kw.get("lease", True), len(state.steps)))
        return state

    monkeypatch.setattr(journal, "open_run", open_run)
    return calls


def _counting_decode(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count JSON decodes of step outputs (the replay path) and codec decodes (all others)."""
    decoded: list[str] = []
    fast, full = _context._json_decode, _codec.Codec.decode

    def json_decode(text: str) -> Any:
        decoded.append(text)
        return fast(text)

    def codec_decode(self: _codec.Codec, codec: str, data: bytes, **kw: Any) -> object:
        decoded.append(f"{codec}:{kw.get('what')}")
        return full(self, codec, data, **kw)

    monkeypatch.setattr(_context, "_json_decode", json_decode)
    monkeypatch.setattr(_codec.Codec, "decode", codec_decode)
    return decoded


def test_a_resume_fetches_the_steps_once_and_decodes_each_replayed_output_once(
    any_journal: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[int] = []

    def produce(i: int) -> dict[str, int]:
        ran.append(i)
        if i == N and len(ran) == N + 1:  # the first call fails at the last step
            raise RuntimeError("the last step fails the first time")
        return {"i": i}

    @durable(journal=any_journal, run_id="fixed", name="replay.work")
    def wf() -> int:
        total = 0
        for i in range(N + 1):
            total += step(f"s{i}", produce, i)["i"]
        return total

    with contextlib.suppress(RuntimeError):
        wf()
    assert ran == [*range(N + 1)]
    ran.clear()
    calls = _counting_open_run(any_journal, monkeypatch)
    decoded = _counting_decode(monkeypatch)
    assert wf() == sum(range(N + 1))
    assert ran == [N]  # only the step that failed runs again
    # the argument check before leasing looks at the run's header only; the leased open
    # brings the N completed steps (and the failed one), once
    assert calls == [(False, 0), (True, N + 1)]
    assert sorted(decoded) == sorted(f'{{"i":{i}}}' for i in range(N))  # each output once


def test_a_look_without_steps_has_the_runs_status_and_arguments(any_journal: Any) -> None:
    @durable(journal=any_journal, run_id="look", name="replay.look")
    def wf(x: int) -> int:
        return sum(step(f"s{i}", lambda i: i * x, i) for i in range(5))

    assert wf(2) == 20
    run_id = "replay.look:look"
    full = any_journal.open_run(run_id=run_id, workflow="replay.look", key="look", lease=False)
    head = any_journal.open_run(
        run_id=run_id, workflow="replay.look", key="look", lease=False, steps=False
    )
    assert len(full.steps) == 5 and head.steps == {}
    assert head._replace(steps={}) == full._replace(steps={})
    assert head.status == "completed" and head.args == full.args is not None
    with pytest.raises(RunArgumentsError):
        wf(3)  # the look is what refuses a call with other arguments


def test_an_owner_without_the_head_feature_still_answers_the_look(tmp_path: Any) -> None:
    """A client talking to an owner of the previous version (no "head" in its hello) sends
    the open_run it always sent, and gets the steps along with the header."""
    from letitloop.journal.duckdb._client import open_journal, stop_owner

    path = tmp_path / "journal" / "journal.duckdb"
    journal = open_journal(path)
    try:

        @durable(journal=journal, run_id="old", name="replay.old")
        def wf(x: int) -> int:
            return sum(step(f"s{i}", lambda i: i + x, i) for i in range(3))

        assert wf(1) == 6
        journal.owner_features = frozenset()  # as an older owner's hello leaves it
        look = journal.open_run(
            run_id="replay.old:old", workflow="replay.old", key="old", lease=False, steps=False
        )
        assert look.status == "completed" and len(look.steps) == 3
        assert wf(1) == 6
        with pytest.raises(RunArgumentsError):
            wf(2)
    finally:
        stop_owner(path)


def test_replay_still_refuses_a_step_called_with_other_arguments(any_journal: Any) -> None:
    ran: list[int] = []
    shift = {"by": 0}

    def produce(i: int) -> int:
        ran.append(i)
        if i == 9 and len(ran) == 10:
            raise RuntimeError("the last step fails the first time")
        return i

    @durable(journal=any_journal, run_id="div", name="replay.div")
    def wf() -> int:
        return sum(step(f"s{i}", produce, i + (shift["by"] if i == 7 else 0)) for i in range(10))

    with contextlib.suppress(RuntimeError):
        wf()
    ran.clear()
    shift["by"] = 1  # the code now calls step 7 with another argument
    with pytest.raises(NonDeterminismError, match="different arguments"):
        wf()
    assert ran == []  # the steps before it replayed: none ran
    shift["by"] = 0
    assert wf() == 45 and ran == [9]  # the same code again: only the failed step runs
