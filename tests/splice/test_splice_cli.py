"""``lil splice`` with click's CliRunner: dry runs, writes, JSON, and clean errors."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import Result

from letitloop.cli import COMMANDS
from tests.helpers import clean_failure, invoke_lil, ok

APP = """\
# Copyright (c) 2025 Example
\"\"\"The app.\"\"\"


class Service:
    # fetch one URL
    def fetch(self, url: str) -> bytes:
        return b""


def helper():
    return 1
"""

NEW_FETCH = "def fetch(self, url: str) -> bytes:\n    return url.encode()\n"


def run(*args: str, input: str | bytes | None = None) -> Result:
    """``lil splice ARGS`` in this process."""
    return invoke_lil("splice", *args, input=input)


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_bytes(APP.encode())
    path.chmod(0o640)
    (tmp_path / "fetch.py").write_text(NEW_FETCH)
    return path


def test_splice_is_registered_lazily() -> None:
    assert COMMANDS["splice"][:2] == ("letitloop.cli._splice", "splice")
    assert "splice" in invoke_lil("--help").output
    assert "outer.<locals>.inner" in ok(run("--help"))


def test_dry_run_prints_the_diff_and_leaves_the_file(app: Path) -> None:
    out = ok(run("replace", str(app), "Service.fetch", "--with", str(app.parent / "fetch.py"),
                 "--dry-run"))  # fmt: skip
    assert f"--- a/{app}\n+++ b/{app}\n" in out
    assert '-        return b""\n+        return url.encode()\n' in out
    assert "dry run: would replace Service.fetch" in out and "nothing written" in out
    assert app.read_bytes() == APP.encode()


def test_replace_writes_atomically_keeping_mode_and_comments(app: Path) -> None:
    out = ok(run("replace", str(app), "Service.fetch", "--with", str(app.parent / "fetch.py")))
    assert "replaced Service.fetch in" in out
    text = app.read_text()
    assert text == APP.replace('return b""', "return url.encode()")
    assert "    # fetch one URL\n" in text
    assert stat.S_IMODE(app.stat().st_mode) == 0o640
    assert sorted(p.name for p in app.parent.iterdir()) == ["app.py", "fetch.py"]  # no temp file


def test_crlf_and_latin1_files_keep_their_bytes(tmp_path: Path) -> None:
    path = tmp_path / "legacy.py"
    before = "# -*- coding: latin-1 -*-\r\ndef name():\r\n    return 'café'\r\n\r\n\r\nX = 1\r\n"
    path.write_bytes(before.encode("latin-1"))
    new = tmp_path / "new.py"
    new.write_text("def name():\n    return 'crème'\n", encoding="utf-8")
    ok(run("replace", str(path), "name", "--with", str(new)))
    assert path.read_bytes() == before.replace("café", "crème").encode("latin-1")


def test_a_symlink_is_written_through(tmp_path: Path, app: Path) -> None:
    link = tmp_path / "link.py"
    link.symlink_to(app)
    ok(run("delete", str(link), "helper"))
    assert link.is_symlink() and "def helper" not in app.read_text()


def test_json_output(app: Path) -> None:
    data = json.loads(ok(run("delete", str(app), "helper", "--dry-run", "--json")))
    assert data["operation"] == "delete" and data["changed"] == ["helper"]
    assert data["dry_run"] is True and data["written"] is False
    assert "-def helper():\n" in data["diff"]
    assert app.read_bytes() == APP.encode()
    listed = json.loads(ok(run("targets", str(app), "--json")))
    assert [t["qualname"] for t in listed] == ["Service", "Service.fetch", "helper"]
    assert listed[1] == {
        "qualname": "Service.fetch",
        "kind": "function",
        "line": 7,
        "first_line": 7,
        "end_line": 8,
        "choose": None,
    }


def test_insert_reads_new_code_from_stdin(app: Path) -> None:
    code = "def close(self):\r\n    pass\r\n"
    out = ok(run("insert", str(app), "--into", "Service", "--with", "-", input=code.encode()))
    assert "inserted Service.close" in out
    assert '        return b""\n\n    def close(self):\n        pass\n\n\ndef helper' in (
        app.read_text()
    )
    ok(run("insert", str(app), "--before", "helper", "--with", "-", input=b"X = 1\n"))
    assert "X = 1\n\n\ndef helper" in app.read_text()


def test_delete_and_show(app: Path) -> None:
    shown = ok(run("source", str(app), "Service.fetch"))
    assert (
        shown
        == '    # fetch one URL\n    def fetch(self, url: str) -> bytes:\n        return b""\n'
    )
    ok(run("delete", str(app), "Service.fetch"))
    assert "class Service:\n    pass\n" in app.read_text()
    assert "Service" in ok(run("targets", str(app)))


def test_replacing_with_the_same_code_writes_nothing(app: Path) -> None:
    own = app.parent / "own.py"
    own.write_text(ok(run("source", str(app), "helper")))
    before = app.stat().st_mtime_ns
    assert "no change" in ok(run("replace", str(app), "helper", "--with", str(own)))
    assert app.stat().st_mtime_ns == before


def test_errors_exit_1_with_a_fix_and_no_traceback(app: Path, tmp_path: Path) -> None:
    new = str(app.parent / "fetch.py")
    clean_failure(run("replace", str(app), "Service.fecth", "--with", new), "did you mean")
    clean_failure(run("replace", str(tmp_path / "nope.py"), "f", "--with", new), "cannot read")
    clean_failure(
        run("replace", str(app), "helper", "--with", str(tmp_path / "nope.py")),
        "cannot read the new code",
    )
    bad = tmp_path / "bad.py"
    bad.write_text("def helper(:\n    pass\n")
    clean_failure(run("replace", str(app), "helper", "--with", str(bad)), "not valid Python")
    clean_failure(
        run("insert", str(app), "--after", "helper", "--into", "Service", "--with", new),
        "at most one",
    )
    assert app.read_bytes() == APP.encode()


def test_choose_and_signature_options(tmp_path: Path) -> None:
    path = tmp_path / "twice.py"
    path.write_text("def f(a):\n    return 1\n\n\ndef f(a):\n    return 2\n")
    new = tmp_path / "new.py"
    new.write_text("def f(a, b):\n    return 3\n")
    err = clean_failure(run("replace", str(path), "f", "--with", str(new)), "--choose")
    assert "1. line 1: def f(a)" in err and "2. line 5: def f(a)" in err
    clean_failure(
        run("replace", str(path), "f", "--with", str(new), "--choose", "2", "--additive"),
        "has no default",
        "old: def f(a)",
        "new: def f(a, b)",
    )
    clean_failure(
        run("replace", str(path), "f", "--with", str(new), "--choose", "2", "--protect", "f"),
        "it is protected",
    )
    ok(run("replace", str(path), "f", "--with", str(new), "--choose", "5"))
    assert path.read_text().endswith("def f(a, b):\n    return 3\n")


def test_diff_is_coloured_on_a_terminal(app: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from letitloop.cli import _output

    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(_output, "is_tty", lambda: True)
    monkeypatch.setattr(
        _output, "say", lambda *parts, **kw: shown.extend((str(p), str(p.style)) for p in parts)
    )
    ok(run("delete", str(app), "helper", "--dry-run"))
    styles = dict(shown)
    assert styles["-def helper():"] == "red"
    assert styles[f"--- a/{app}"] == "bold"
    assert next(style for line, style in shown if line.startswith("@@")) == "cyan"
    assert not any("\r" in line for line, _ in shown)
