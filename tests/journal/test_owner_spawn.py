"""How a client starts a journal's owner (``os.posix_spawn``, not ``subprocess``: a cold start
saves importing it): detached in its own session, in the journal's directory, holding none of
its starter's descriptors, and importing nothing from its starter's working directory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STARTER = textwrap.dedent(
    """
    import json, os, sys
    r, w = os.pipe()
    os.set_inheritable(w, True)  # as a descriptor a shell or a test runner hands down is
    from letitloop import open_journal
    journal = open_journal(sys.argv[1])
    os.close(w)
    pid = journal.owner_pid
    held = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    print(json.dumps({"pid": pid, "cwd": os.readlink(f"/proc/{pid}/cwd"), "held": held,
                      "pipe": os.readlink(f"/proc/self/fd/{r}"), "sid": os.getsid(pid),
                      "my_sid": os.getsid(0)}))
    """
)


def test_an_owner_starts_detached_in_its_journal_directory_holding_nothing_of_ours(
    tmp_path: Path,
) -> None:
    import json

    starter_dir = tmp_path / "project"
    starter_dir.mkdir()
    # a module of the starter's directory the owner imports, the client never does: it must
    # not shadow the owner's (the owner runs with -P, so the directory is not on its path)
    (starter_dir / "queue.py").write_text("raise RuntimeError('the owner imported queue.py')\n")
    journal = tmp_path / "j" / "journal.duckdb"
    env = dict(os.environ, PYTHONPATH=str(ROOT), LIL_OWNER_IDLE="30")
    out = subprocess.run(
        [sys.executable, "-c", STARTER, str(journal)],
        cwd=starter_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    found = json.loads(out.splitlines()[-1])
    try:
        assert found["cwd"] == str(journal.parent)  # not the starter's directory
        assert found["pipe"] not in found["held"]  # the inheritable pipe was closed for it
        assert found["sid"] == found["pid"] != found["my_sid"]  # its own session
        log = journal.with_name(journal.name + ".owner.log").read_text()
        assert "READY" in log and "queue.py" not in log
    finally:
        from letitloop.journal.duckdb._client import stop_owner

        stop_owner(journal)


def test_sigterm_stops_an_owner_cleanly(tmp_path: Path) -> None:
    """SIGTERM (a system shutdown, `kill`) folds everything, leaves the warm snapshot for the
    next owner and removes the pid file: the handler is installed through ``_signal``."""
    import signal
    import time

    from letitloop import durable, step
    from letitloop.journal import open_journal

    journal = tmp_path / "j" / "journal.duckdb"

    @durable(journal=str(journal), run_id="term", name="spawn.term")
    def wf() -> int:
        step("one", lambda: 1)
        return step("two", lambda: 2)

    assert wf() == 2
    pid = open_journal(journal).owner_pid
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
            break  # exited (a zombie of the process that started it)
        time.sleep(0.02)
    assert not journal.with_name(journal.name + ".pid").exists()
    assert journal.with_name(journal.name + ".warm").exists()
    assert "SIGTERM" not in journal.with_name(journal.name + ".owner.log").read_text()
