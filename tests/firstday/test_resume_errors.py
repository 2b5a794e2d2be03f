"""Issue 29, point 2: a resumed run whose step raises is shown in the house format (error:, the
user's frames, fix:) by `lil runs resume` and `lil runs fork --run`; the note that resuming
imports the module is shown only when its top level runs code outside a `__main__` guard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _kill_owner
from tests.helpers import child_env, run_lil

FLOW = """
import os
from letitloop import durable, step

def fetch() -> int:
    return 41

def summarize(x: int) -> int:
    if not os.environ.get("FIXED"):
        raise ValueError(f"the model answered nonsense for {x}")
    return x + 1

@durable(run_id="r1")
def pipeline() -> int:
    x = step("fetch", fetch)
    return step("summarize", summarize, x)

if __name__ == "__main__":
    print(pipeline())
"""


@pytest.fixture
def failed_run(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    journal = tmp_path / "journal.duckdb"
    (tmp_path / "flow.py").write_text(FLOW)
    env = child_env(journal)
    env.pop("FIXED", None)
    first = subprocess.run(
        [sys.executable, "flow.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert first.returncode == 1 and "ValueError" in first.stderr
    yield tmp_path, env
    _kill_owner(journal)


def assert_house_format(said: str, run_id: str) -> None:
    lines = said.strip().splitlines()
    assert lines[0] == (
        f"error: run {run_id} failed: ValueError: the model answered nonsense for 41"
    ), said
    assert lines[-1].startswith(f"  fix: fix the cause, then `lil runs resume {run_id}`"), said
    assert 'flow.py", line 10, in summarize' in said and "raise ValueError(" in said  # user's
    assert "Traceback" not in said and "click" not in said, said
    assert "letitloop/" not in said, said  # no frame of letitloop or of click
    assert len(lines) <= 12, said
    assert "note: resuming imports" not in said  # a guarded script runs nothing on import


def test_lil_runs_resume_shows_a_failing_step_in_the_house_format(
    failed_run: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = failed_run
    out = run_lil("runs", "resume", "r1", cwd=cwd, env=env, timeout=60)
    assert out.returncode == 1
    assert_house_format(out.stderr, "flow.pipeline:r1")
    fixed = run_lil("runs", "resume", "r1", cwd=cwd, env={**env, "FIXED": "1"}, timeout=60)
    assert fixed.returncode == 0 and "result: 42" in fixed.stdout, fixed.stderr


def test_lil_runs_fork_run_shows_it_in_the_same_format(
    failed_run: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = failed_run
    out = run_lil(
        "runs", "fork", "r1", "--from", "summarize", "--run", cwd=cwd, env=env, timeout=60
    )
    assert out.returncode == 1, out.stdout + out.stderr
    fork_id = out.stderr.split("error: run ", 1)[1].split(" failed", 1)[0]
    assert fork_id.startswith("flow.pipeline:r1~"), out.stderr
    assert_house_format(out.stderr, fork_id)


def test_the_import_note_stays_for_code_outside_a_guard(tmp_path: Path) -> None:
    from letitloop.cli._resumed import _runs_code_on_import

    guarded = tmp_path / "guarded.py"
    guarded.write_text(FLOW)
    assert not _runs_code_on_import(str(guarded))
    loose = tmp_path / "loose.py"
    loose.write_text(FLOW.replace('if __name__ == "__main__":\n    ', ""))
    assert _runs_code_on_import(str(loose))
    assigned = tmp_path / "assigned.py"
    assigned.write_text(FLOW + "\nresult = pipeline()\n")
    assert _runs_code_on_import(str(assigned))
