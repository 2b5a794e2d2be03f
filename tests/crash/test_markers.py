"""``atomic_marker`` across real SIGKILLs: a side effect is never silently repeated.

The worker (workers/marker_worker.py) runs ``step("before")``, then a marker block whose side
effect is a line ``effect <pid>`` appended (and fsynced) to a file, then ``step("after")``. It can
SIGKILL itself inside the block (after the side effect) or before the block.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from letitloop import open_journal
from tests.crash.crash_helpers import Worker, read_lines

MARKER = "send-email"
RESULT = "RESULT total=42"


class Runner:
    """Calls the marker workflow of one run in a fresh process each time."""

    def __init__(self, journal_path: Path, tmp_path: Path, key: str = "m1") -> None:
        self.journal_path = journal_path
        self.effects = tmp_path / "effects.txt"
        self.stderr = tmp_path / "marker_worker.stderr"
        self.key = key
        self.run_id = f"markers:{key}"

    def call(
        self, kill: str = "none", reconcile: str = "none", *extra: str
    ) -> tuple[int, list[str]]:
        w = Worker(
            "marker_worker.py",
            self.journal_path,
            self.effects,
            self.key,
            kill,
            reconcile,
            *extra,
            stderr_path=self.stderr,
        )
        try:
            rc = w.finish(60)
        finally:
            w.kill()
        assert rc in (0, 3, -9), f"unexpected exit: {w.diagnostics()}"
        return rc, w.snapshot()

    def kinds(self) -> list[str]:
        """The side-effect lines without pids: 'effect', 'after', 'reconcile:...'."""
        return [line.split()[0] for line in read_lines(self.effects)]

    def marker_attempts(self) -> list:  # type: ignore[type-arg]
        detail = open_journal(self.journal_path).get_run(self.run_id)
        return [a for a in detail.attempts if a.kind == "marker"]

    def kill_inside_block(self) -> None:
        rc, out = self.call(kill="in_block")
        assert rc == -9, out
        assert self.kinds() == ["effect"]


def in_doubt(out: list[str]) -> dict:  # type: ignore[type-arg]
    line = next(x for x in out if x.startswith("INDOUBT "))
    return json.loads(line[len("INDOUBT ") :])  # type: ignore[no-any-return]


@pytest.mark.timeout(90)
def test_killed_inside_block_is_in_doubt_and_not_repeated(
    journal_path: Path, tmp_path: Path
) -> None:
    """Killed after the side effect, inside the block: every later call raises InDoubtError
    naming the marker and the fix (`lil effects resolve`), and never runs the block again."""
    r = Runner(journal_path, tmp_path)
    r.kill_inside_block()
    for _ in range(2):  # the doubt persists until someone decides
        rc, out = r.call()
        assert rc == 3, out
        err = in_doubt(out)
        assert MARKER in err["str"] and MARKER in err["message"]
        assert f"lil effects resolve {r.run_id} {MARKER}" in err["str"]  # the fix, in str(exc)
        assert "lil effects resolve" in err["fix"]
        assert err["type"] == "InDoubtError"
        assert err["step"] == MARKER
        assert err["run_id"] == r.run_id
        assert r.kinds() == ["effect"], "the side effect was repeated (or the run went on)"
    [marker] = r.marker_attempts()
    assert (marker.status, marker.resolution) == ("started", None)


@pytest.mark.timeout(90)
def test_reconcile_done_continues_without_repeating_block(
    journal_path: Path, tmp_path: Path
) -> None:
    """``reconcile`` returning "done": the run completes, the block is not run again, the
    decision is journaled, and a later call returns the result without running anything."""
    r = Runner(journal_path, tmp_path)
    r.kill_inside_block()
    rc, out = r.call(reconcile="done")
    assert rc == 0 and RESULT in out, out
    assert r.kinds() == ["effect", f"reconcile:{MARKER}:1:1", "after"]
    [marker] = r.marker_attempts()
    assert marker.resolution == "done"
    assert marker.resolved_by is not None and marker.resolved_by.startswith("reconcile@")
    rc, out = r.call(reconcile="done")
    assert rc == 0 and RESULT in out, out
    assert r.kinds() == ["effect", f"reconcile:{MARKER}:1:1", "after"], "completed run re-ran"


@pytest.mark.timeout(90)
def test_reconcile_redo_runs_block_again_exactly_once(journal_path: Path, tmp_path: Path) -> None:
    """``reconcile`` returning "redo": the block runs exactly once more (attempt 2, completed),
    then the run completes; later calls run nothing."""
    r = Runner(journal_path, tmp_path)
    r.kill_inside_block()
    rc, out = r.call(reconcile="redo")
    assert rc == 0 and RESULT in out, out
    assert r.kinds() == ["effect", f"reconcile:{MARKER}:1:1", "effect", "after"]
    attempts = r.marker_attempts()
    assert [(a.attempt, a.status, a.resolution) for a in attempts] == [
        (1, "started", "redo"),
        (2, "completed", None),
    ]
    rc, out = r.call(reconcile="redo")
    assert rc == 0 and RESULT in out, out
    assert r.kinds().count("effect") == 2, "the block ran a third time"


@pytest.mark.timeout(90)
@pytest.mark.parametrize("resolution", ["done", "redo"])
def test_resolve_through_journal_then_call_again_continues(
    journal_path: Path, tmp_path: Path, resolution: str
) -> None:
    """In doubt, then resolved by a person through ``open_journal().resolve_marker``: the next
    call (without a reconcile callback) continues; "done" skips the block, "redo" runs it once."""
    r = Runner(journal_path, tmp_path)
    r.kill_inside_block()
    rc, out = r.call()
    assert rc == 3, out
    open_journal(journal_path).resolve_marker(r.run_id, MARKER, resolution, by="test")
    rc, out = r.call()
    assert rc == 0 and RESULT in out, out
    expected = ["effect", "after"] if resolution == "done" else ["effect", "effect", "after"]
    assert r.kinds() == expected
    first = r.marker_attempts()[0]
    assert (first.resolution, first.resolved_by) == (resolution, "test")
    rc, out = r.call()
    assert rc == 0 and RESULT in out, out
    assert r.kinds() == expected


@pytest.mark.timeout(90)
def test_killed_before_block_is_not_in_doubt(journal_path: Path, tmp_path: Path) -> None:
    """Killed between steps, before the marker was reached: no doubt; the next call runs the
    block exactly once and completes; later calls run nothing."""
    r = Runner(journal_path, tmp_path)
    rc, out = r.call(kill="before_block")
    assert rc == -9, out
    assert r.kinds() == []
    rc, out = r.call()
    assert rc == 0 and RESULT in out, out
    assert r.kinds() == ["effect", "after"]
    [marker] = r.marker_attempts()
    assert (marker.attempt, marker.status) == (1, "completed")
    rc, out = r.call()
    assert rc == 0 and RESULT in out, out
    assert r.kinds() == ["effect", "after"]


@pytest.mark.timeout(120)
def test_a_marker_resolved_done_keeps_its_place_across_later_crashes(
    journal_path: Path, tmp_path: Path
) -> None:
    """Found by `lil bench` (SIGKILL inside a side effect, then two more kills): the steps after a
    marker resolved as done were numbered from the last recorded position again on every
    replay, so a step completed after the resolution ran again after the next crash."""
    r = Runner(journal_path, tmp_path, key="m9")
    assert r.call("in_block", "done", "third")[0] == -9
    assert r.call("in_after", "done", "third")[0] == -9  # resolved done; killed inside "after"
    assert r.call("in_third", "done", "third")[0] == -9  # "after" completes; killed in "third"
    rc, out = r.call("none", "done", "third")
    assert rc == 0 and RESULT in out, out
    kinds = r.kinds()
    assert kinds.count("effect") == 1, kinds
    assert kinds.count("after") == 2, kinds  # the killed attempt and the one that completed
    assert kinds.count("third") == 2, kinds
