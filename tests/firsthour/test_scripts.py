"""Points 11 and 15: a script blocked in approval() says so at once; `lil runs resume` warns."""

from __future__ import annotations

import re
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest

from letitloop.journal.duckdb._client import open_journal
from tests.helpers import ROOT, child_env, run_lil

HERE = Path(__file__).resolve().parent


def env(journal: Path) -> dict[str, str]:
    return child_env(journal)


def read_stderr_until(proc: subprocess.Popen[str], pattern: str, seconds: float) -> str:
    """What the process wrote to stderr until ``pattern`` appeared (or the deadline)."""
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    seen = ""
    deadline = time.monotonic() + seconds
    while not re.search(pattern, seen) and time.monotonic() < deadline:
        if sel.select(timeout=0.1):
            line = proc.stderr.readline()
            if not line:
                break
            seen += line
    return seen


def test_a_script_blocked_in_approval_says_so_on_stderr_at_once(journal_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "blocked_script.py")],
        env=env(journal_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = read_stderr_until(proc, r"lil approvals approve \w+", 30)
        [row] = open_journal(journal_path).approvals(status="pending")
        assert f"lil approvals approve {row.id}" in said, said
        assert f"lil approvals reject {row.id}" in said and "'publish'" in said
        assert proc.poll() is None  # still waiting: nothing decided it
        decided = run_lil("approvals", "approve", row.id, journal=journal_path, timeout=60)
        assert decided.returncode == 0, decided.stderr
        out, _ = proc.communicate(timeout=60)
        assert out.strip() == "APPROVED"
    finally:
        proc.kill()
        proc.wait()


def test_splice_proposals_record_who_with_the_one_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point 12 (identity): with $USER unset (a container, cron) proposals said ``unknown``."""
    from letitloop.journal._config import who
    from letitloop.journal._memory import MemoryJournal
    from letitloop.splice import propose_splice

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("USERNAME", raising=False)
    src = tmp_path / "mod.py"
    src.write_text("def f():\n    return 1\n")
    journal = MemoryJournal()
    p = propose_splice(src, "f", "def f():\n    return 2\n", reason="r", journal=journal)
    assert p.by == who() and not p.by.startswith("unknown")


def _choices(command: object, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], list[str]]:
    """Every --status/--state option of the lil command tree: its command path and values."""
    import click

    found: dict[tuple[str, ...], list[str]] = {}
    assert isinstance(command, click.Command)
    for param in command.params:
        if isinstance(param.type, click.Choice) and param.name in ("status", "state", "statuses"):
            found[path] = [str(c) for c in param.type.choices]
    if isinstance(command, click.Group):  # lil loads its command groups lazily
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            found |= _choices(command.get_command(ctx, name), (*path, name))
    return found


def test_docs_cli_lists_every_status_the_cli_accepts() -> None:
    """Point 15: docs/cli.md's Statuses section names every value of every --status option."""
    from letitloop.cli import lil

    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split("## Statuses", 1)[1].split("\n## ", 1)[0]
    choices = _choices(lil)
    assert ("runs", "list") in choices and ("approvals", "list") in choices
    for path, values in choices.items():
        for value in values:
            assert f"`{value}`" in section, f"lil {' '.join(path)}: status {value!r} undocumented"


def test_lil_runs_resume_warns_that_it_imports_the_module(journal_path: Path) -> None:
    """Point 15: top-level code of the workflow's script runs again on resume: say so."""
    script = journal_path.parent.parent / "unguarded.py"
    script.write_text(
        "from letitloop import durable, suspend\n"
        "print('TOP LEVEL RAN', flush=True)\n"
        "@durable(name='unguarded', run_id='u1')\n"
        "def flow():\n"
        "    suspend('wait')\n"
        "    return 1\n"
        "if __name__ == '__main__':\n"
        "    try:\n"
        "        flow()\n"
        "    except Exception:\n"
        "        pass\n"
    )
    first = subprocess.run(
        [sys.executable, str(script)], env=env(journal_path), capture_output=True, text=True
    )
    assert first.returncode == 0, first.stderr
    resumed = run_lil(
        "runs", "resume", "unguarded:u1", journal=journal_path, cwd=script.parent, timeout=60
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming imports {script}" in resumed.stderr
    assert "top-level code runs again" in resumed.stderr and "__main__" in resumed.stderr
