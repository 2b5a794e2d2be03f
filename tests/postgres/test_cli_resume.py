"""``lil runs resume`` on a PostgreSQL journal: a run suspended by one process continues in the
``lil`` process, its journaled steps replayed (not run again), its workflow found by its entry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import child_env, run_lil

SCRIPT = """
import sys
from letitloop import durable, step, suspend

@durable(name="pgresume.wf", run_id="x1")
def wf():
    a = step("a", lambda: open(sys.argv[1], "a").write("a\\n") and 1)
    suspend("wait for the night batch")
    return step("b", lambda: a + 1)

if __name__ == "__main__":
    try:
        print(wf())
    except Exception as exc:
        print(type(exc).__name__)
"""


def test_lil_runs_resume_continues_a_run_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    script = tmp_path / "nightly.py"
    script.write_text(SCRIPT)
    log = tmp_path / "ran.txt"
    env = child_env(pg_dsn)
    first = subprocess.run(
        [sys.executable, str(script), str(log)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert first.stdout.strip() == "Suspended", first.stderr
    resumed = run_lil(
        "runs", "resume", "pgresume.wf:x1", "--journal", pg_dsn, "--json", cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["result"] == 2
    assert log.read_text() == "a\n"  # step a replayed from the journal, not run again
