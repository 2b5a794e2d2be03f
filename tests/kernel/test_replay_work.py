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
from letitloop.errors import NonDeterminismError, RunArgumentsError
from letitloop.journal import _contract
from letitloop.kernel import _codec, _context, _fingerprint

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


@pytest.mark.parametrize(
    "text",
    ['"abc"', '"a\\"b\\u00e9\\n"', "12", "-1.5e3", "true", "null", '[1, {"a": [2]}]', "{}"]
    + ['"\u00e9\u4e2d"', "[]", '{"k":"v","n":[1,2,3]}', " 1", "1 ", "-Infinity"],
)
def test_the_direct_json_decode_reads_what_json_loads_reads(text: str) -> None:
    import json

    assert _codec._json_decode(text) == json.loads(text)
    assert type(_codec._json_decode(text)) is type(json.loads(text))


@pytest.mark.parametrize("text", ["", "[1,", '"abc', "1 2", "nan", "{'a': 1}", "tru"])
def test_the_direct_json_decode_refuses_what_json_loads_refuses(text: str) -> None:
    import json

    with pytest.raises(ValueError) as direct:
        _codec._json_decode(text)
    try:
        json.loads(text)
    except ValueError as exc:
        assert type(direct.value) is type(exc)
    else:  # json.loads accepts surrounding whitespace: the full decoder is the fallback
        raise AssertionError(f"json.loads accepted {text!r} but the direct decode refused it")


def test_fingerprints_are_the_same_remembered_or_not() -> None:
    """The memo of scalar fingerprints returns what hashing returns, and keeps True apart from
    1 (equal as keys of a dict, but not the same argument)."""
    import hashlib

    def hashed(args: tuple[object, ...]) -> str:
        text = "s:" + repr(args)
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()

    _fingerprint._FP_MEMO.clear()
    _fingerprint._FP_ONE.clear()
    one: list[tuple[object, ...]] = [(1,), (True,), ("a",), (None,), (0,), (False,), ("x" * 500,)]
    for args in [*one, ("x", None, 3), *one]:  # each single scalar twice: hashed, then kept
        assert _fingerprint.fingerprint(args, {}) == hashed(args)
    for args in [([1],), ({"a": 1},)]:  # unhashable, not scalar: walked, never kept
        assert _fingerprint.fingerprint(args, {}) == _fingerprint.fingerprint(args, {})
    assert (bool, True) in _fingerprint._FP_ONE and (int, 1) in _fingerprint._FP_ONE
    assert _fingerprint._FP_ONE[bool, True] != _fingerprint._FP_ONE[int, 1]
    assert (str, "x" * 500) not in _fingerprint._FP_ONE
    assert _fingerprint.fingerprint((1,), {}) != _fingerprint.fingerprint((True,), {})
    assert "s:" + repr(("x" * 500,)) not in _fingerprint._FP_MEMO  # long texts are not kept
    assert _fingerprint.fingerprint((1,), {"k": 2}) == _fingerprint.fingerprint((1,), {"k": 2})
    assert _fingerprint.fingerprint((1.5,), {}) == _fingerprint.fingerprint(
        (1.5,), {}
    )  # not scalar: walked


def test_open_runs_rows_become_step_records_and_a_malformed_row_is_refused() -> None:
    from letitloop.journal._state import run_state

    row = [3, 1, "step", "s3", "fp", "completed", "json", b'"x"', False, None, None, None]
    head = {"run": "r", "wf": "w", "key": "k", "epoch": 0, "status": "running", "try": 1}
    wire = head | {"result": None, "error": None, "steps": [row, [4, *row[1:]]]}
    state = run_state(wire)
    assert state.steps == {3: _contract.StepRecord._make(row), 4: (4, *row[1:])}
    assert type(state.steps[4]) is _contract.StepRecord and state.steps[4].output == b'"x"'
    with pytest.raises(TypeError):
        run_state(wire | {"steps": [row, row[:11]]})  # one field short: not a step
