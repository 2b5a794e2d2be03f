"""Other local users get nothing unless a group is invited (issue 14, point 15).

Real parts: a real second user (and group) created here as root with ``useradd``/``groupadd``
and removed afterwards, a client process that really runs as that user (forked, then
``setgroups``/``setgid``/``setuid``), a real owner. On the old owner the journal's files
followed the umask (0644, or 0666 under umask 000) and any user who could reach the socket
was served.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import socket
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb import _wire
from tests.helpers import child_env
from tests.trust.trust_helpers import start_owner


@pytest.fixture
def other_user() -> Iterator[tuple[str, int, int, str]]:
    """(user, uid, gid, group): a throwaway user in a throwaway supplementary group."""
    tag = uuid.uuid4().hex[:8]
    user, group = f"liltrust{tag}", f"lilshare{tag}"
    subprocess.run(["groupadd", group], check=True)
    subprocess.run(["useradd", "-M", "-N", "-G", group, user], check=True)
    try:
        entry = pwd.getpwnam(user)
        yield user, entry.pw_uid, entry.pw_gid, group
    finally:
        subprocess.run(["userdel", user], check=False)
        subprocess.run(["groupdel", group], check=False)


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user can reach (pytest's own tmp dirs are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="lil-users-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        from tests.conftest import _kill_owner

        _kill_owner(path / "journal.duckdb")
        subprocess.run(["rm", "-rf", str(path)], check=False)


def _as_user(uid: int, gid: int, groups: list[int], socket_path: Path, client: bool) -> Any:
    """Connect as another user in a forked child; return what it saw (reply or error)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become the other user, then talk to the owner
        try:
            os.close(r)
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            if client:
                from letitloop.journal.duckdb._client import OwnerJournal

                try:
                    OwnerJournal(socket_path)  # here: the journal path
                    result: Any = {"served": True}
                except Exception as exc:
                    result = {"error": type(exc).__name__, "message": str(exc)}
            else:
                sock = socket.socket(socket.AF_UNIX)
                sock.settimeout(10)
                try:
                    sock.connect(str(socket_path))
                    sock.sendall(_wire.pack({"op": "hello", "session": "other/1", "id": 1}))
                    result = _wire.Stream(sock).recv()
                except OSError as exc:
                    result = {"oserror": exc.errno}
            os.write(w, json.dumps(result).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.timeout(120)
def test_journal_files_are_private_whatever_the_umask(open_dir: Path) -> None:
    """A workflow run under umask 000: every file the journal has is the user's alone."""
    journal = open_dir / "journal.duckdb"
    code = (
        "import os; os.umask(0)\n"
        "from letitloop import durable, step\n"
        f"@durable(journal={str(journal)!r})\n"
        "def f(x):\n    return step('s', lambda v: v + 1, x)\n"
        "print(f(1))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
    )
    assert done.stdout.strip() == "2", done.stderr
    paths = JournalPaths(journal)
    wal = journal.with_name(journal.name + ".wal")
    files = [journal, paths.lock, paths.pid_file, paths.owner_log, paths.socket]
    files += [wal] if wal.exists() else []
    files += list(paths.log_dir.iterdir())
    loose = {str(p): oct(_mode(p)) for p in files if _mode(p) & 0o077}
    assert not loose, f"readable or writable by others: {loose}"
    assert _mode(paths.log_dir) & 0o077 == 0, oct(_mode(paths.log_dir))


@pytest.mark.timeout(120)
def test_another_user_is_refused_even_with_a_loosened_socket(
    open_dir: Path, other_user: tuple[str, int, int, str]
) -> None:
    """As the other user: the socket's mode refuses the connection (the client says who may
    use the journal); with the socket's mode loosened by hand, the owner's SO_PEERCRED check
    refuses the hello with a reply naming the uid, and the owner serves its own user on."""
    _, uid, gid, _ = other_user
    journal = open_dir / "journal.duckdb"
    client, pid = start_owner(journal)
    paths = JournalPaths(journal)
    try:
        seen = _as_user(uid, gid, [], journal, client=True)
        assert seen["error"] == "JournalUnavailableError", seen
        assert "may not use the journal" in seen["message"], seen
        os.chmod(paths.socket, 0o777)  # what an old version or a careless chmod left
        seen = _as_user(uid, gid, [], paths.socket, client=False)
        assert seen.get("ok") is False, seen
        assert f"uid {uid}" in seen["error"]["message"], seen
        assert "share_with_group" in seen["error"]["fix"], seen
        assert client.stats()["pid"] == pid
    finally:
        client.close()


@pytest.mark.timeout(120)
def test_a_configured_group_may_connect(
    open_dir: Path, other_user: tuple[str, int, int, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With LIL_SHARE_GROUP naming the other user's group, the files and the socket belong to
    that group (0660, directories 0770) and the other user is served; a user outside the
    group is still refused, even through a socket whose mode was loosened."""
    _, uid, gid, group = other_user
    share_gid = grp.getgrnam(group).gr_gid
    monkeypatch.setenv("LIL_SHARE_GROUP", group)
    journal = open_dir / "journal.duckdb"
    client, pid = start_owner(journal)
    paths = JournalPaths(journal)
    try:
        st = os.stat(paths.socket)
        assert st.st_gid == share_gid and stat.S_IMODE(st.st_mode) == 0o660
        assert stat.S_IMODE(os.stat(paths.log_dir).st_mode) == 0o770
        seen = _as_user(uid, gid, [share_gid], paths.socket, client=False)
        assert seen.get("ok") is True and seen["pid"] == pid, seen
        outsider = f"liloutside{uuid.uuid4().hex[:6]}"
        subprocess.run(["useradd", "-M", "-N", outsider], check=True)
        try:
            os.chmod(paths.socket, 0o777)
            out_uid = pwd.getpwnam(outsider).pw_uid
            seen = _as_user(out_uid, gid, [], paths.socket, client=False)
            assert seen.get("ok") is False and f"uid {out_uid}" in seen["error"]["message"], seen
        finally:
            subprocess.run(["userdel", outsider], check=False)
    finally:
        client.close()
