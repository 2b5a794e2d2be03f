"""Write the fixture journal of tests/journal/test_old_journal.py with whatever letitloop is on
the path (a checkout of the version to keep readable), into a tarball.

    git worktree add --detach /tmp/old REV
    PYTHONPATH=/tmp/old python tests/data/make_old_journal.py tests/data/journal-REV.tar.gz

The journal holds a completed run (3 steps), a failed run (five completed steps, the sixth
raised), both folded into DuckDB by a clean stop of the owner, and a third run (4 steps) written
by a second owner that is then SIGKILLed, leaving its log segment and DuckDB's WAL as a kill does.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any


def main(out: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="old-journal-"))
    os.environ["LIL_KEY_DIR"] = str(root / "keys")
    path = root / "journal.duckdb"
    from letitloop import durable, step
    from letitloop.journal.duckdb._client import stop_owner

    def out_of(i: int) -> dict[str, Any]:
        return {"i": i, "text": f"step {i}"}

    def failing_at(i: int) -> dict[str, Any]:
        if i == 5:
            raise RuntimeError("step 5 fails under this version")
        return out_of(i)

    @durable(journal=path, run_id="old-ok", name="fixture.flow")
    def ok_flow() -> list[Any]:
        return [step(f"s{i}", out_of, i) for i in range(3)]

    @durable(journal=path, run_id="old-failed", name="fixture.flow")
    def failing() -> list[Any]:
        return [step(f"s{i}", failing_at, i) for i in range(6)]

    @durable(journal=path, run_id="old-unfolded", name="fixture.flow")
    def unfolded() -> list[Any]:
        return [step(f"s{i}", out_of, i) for i in range(4)]

    ok_flow()
    try:
        failing()
    except RuntimeError:
        pass
    else:
        raise SystemExit("the failing run did not fail")
    stop_owner(path)  # folds what it holds into DuckDB
    unfolded()
    from letitloop.journal._config import JournalPaths

    os.kill(json.loads(JournalPaths(path).pid_file.read_text())["pid"], signal.SIGKILL)
    time.sleep(0.5)  # the kernel closes the killed owner's files
    with tarfile.open(out, "w:gz") as tar:
        for part in ("journal.duckdb", "journal.duckdb.wal", "journal.duckdb.log", "keys"):
            if (root / part).exists():
                tar.add(root / part, arcname=part)
    print(f"wrote {out}: {sorted(os.listdir(root))}")


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
