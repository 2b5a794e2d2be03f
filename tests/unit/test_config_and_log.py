"""Journal discovery, socket paths, and the owner's log framing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from letitloop.errors import ConfigError, JournalError
from letitloop.journal._config import JournalPaths, find_journal
from letitloop.journal.duckdb.owner._log import Log, frame


def test_explicit_then_env_then_pyproject_then_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LIL_JOURNAL", raising=False)
    project = tmp_path / "proj"
    (project / "src" / "pkg").mkdir(parents=True)
    (project / ".git").mkdir()
    deep = project / "src" / "pkg"
    assert find_journal(cwd=deep) == project / ".letitloop" / "journal.duckdb"
    (project / "pyproject.toml").write_text('[tool.letitloop]\njournal = "state/j.duckdb"\n')
    assert find_journal(cwd=deep) == project / "state" / "j.duckdb"
    monkeypatch.setenv("LIL_JOURNAL", str(tmp_path / "env.duckdb"))
    assert find_journal(cwd=deep) == tmp_path / "env.duckdb"
    assert find_journal(tmp_path / "arg.duckdb", cwd=deep) == tmp_path / "arg.duckdb"
    (tmp_path / "dir").mkdir()
    assert find_journal(tmp_path / "dir") == tmp_path / "dir" / "journal.duckdb"


def test_no_project_marker_means_current_directory(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("LIL_JOURNAL", raising=False)
    if any((p / m).exists() for p in tmp_path.parents for m in (".git", "pyproject.toml")):
        pytest.skip("a parent of the temp dir is a project")  # pragma: no cover
    assert find_journal(cwd=tmp_path) == tmp_path / ".letitloop" / "journal.duckdb"


def test_bad_configuration_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("LIL_JOURNAL", raising=False)
    (tmp_path / "pyproject.toml").write_text("[tool.letitloop]\njournal = 3\n")
    with pytest.raises(ConfigError, match="must be a path string"):
        find_journal(cwd=tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.letitloop\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        find_journal(cwd=tmp_path)
    with pytest.raises(ConfigError, match="URL"):
        find_journal("postgresql://localhost/db")


def test_long_paths_move_the_socket_to_a_short_directory(tmp_path: Path) -> None:
    short = JournalPaths(tmp_path / "j.duckdb")
    assert short.socket == tmp_path / "j.duckdb.sock"
    long = JournalPaths(tmp_path / ("x" * 120) / "j.duckdb")
    assert len(str(long.socket)) < 100 and long.socket.name.endswith(".sock")
    assert long.socket == JournalPaths(tmp_path / ("x" * 120) / "j.duckdb").socket


def test_log_cuts_a_torn_tail_and_keeps_every_whole_frame(tmp_path: Path) -> None:
    log = Log(tmp_path / "log")
    assert log.recover(0) == ([], 0)
    end = log.append(frame(b"one") + frame(b"two"))
    log.close()
    with open(tmp_path / "log" / f"{0:020d}.wal", "ab") as f:
        f.write(frame(b"three")[:-2])  # killed mid-write
    log = Log(tmp_path / "log")
    items, torn = log.recover(0)
    assert [p for _, p in items] == [b"one", b"two"] and torn == 1
    assert items[-1][0] == end and log.end == end
    assert log.recover(end)[0] == []  # everything below folded_lsn is skipped


def test_corrupt_frame_in_a_sealed_segment_stops_recovery(tmp_path: Path) -> None:
    log = Log(tmp_path / "log", segment_bytes=16)
    log.recover(0)
    log.append(frame(b"first-record"))
    log.append(frame(b"second-record"))  # rotates: the first segment is sealed
    log.close()
    first = sorted((tmp_path / "log").iterdir())[0]
    data = bytearray(first.read_bytes())
    data[10] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(JournalError, match="corrupt"):
        Log(tmp_path / "log", segment_bytes=16).recover(0)


def test_folded_segments_are_deleted(tmp_path: Path) -> None:
    log = Log(tmp_path / "log", segment_bytes=16)
    log.recover(0)
    ends = [log.append(frame(b"record-%d" % i)) for i in range(3)]
    assert len(os.listdir(tmp_path / "log")) == 3
    log.drop_folded(ends[0])  # the first segment is folded entirely
    assert len(os.listdir(tmp_path / "log")) == 2
    log.drop_folded(ends[2])  # the current segment is never deleted
    assert len(os.listdir(tmp_path / "log")) == 1
