"""Shared fixtures: a fresh journal file per test, served by the real owner process."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Keys for authenticated pickles go to a throwaway directory, never the user's ~/.config.
os.environ.setdefault("LIL_KEY_DIR", tempfile.mkdtemp(prefix="lil-keys-"))
os.environ.setdefault("LIL_OWNER_IDLE", "60")


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    import json
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return set(json.loads(out.stdout))


def _kill_owner(path: Path) -> None:
    from letitloop.journal._config import JournalPaths
    from letitloop.journal.duckdb._client import stop_owner

    if stop_owner(path) is None:
        pid_file = JournalPaths(path).pid_file
        if pid_file.exists():
            import json

            try:
                os.kill(json.loads(pid_file.read_text())["pid"], signal.SIGKILL)
            except (ProcessLookupError, ValueError, KeyError):
                pass


@pytest.fixture
def journal_path(tmp_path: Path) -> Iterator[Path]:
    """A journal file of its own; its owner is stopped after the test."""
    path = tmp_path / "journal" / "journal.duckdb"
    yield path
    _kill_owner(path)


@pytest.fixture
def journal(journal_path: Path):  # type: ignore[no-untyped-def]
    """The real owner-backed journal for ``journal_path``."""
    from letitloop.journal.duckdb._client import open_journal

    return open_journal(journal_path)


@pytest.fixture
def memory_journal():  # type: ignore[no-untyped-def]
    from letitloop.journal._memory import MemoryJournal

    return MemoryJournal()
