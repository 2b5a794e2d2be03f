"""Configuration comes only from files the user trusts (issue 35, point 2).

Real parts: a real second OS user (``useradd``) who plants a ``pyproject.toml`` in a shared
sticky world-writable folder (as ``/tmp`` is) above where the victim works, real workflow
processes of the victim (root) with their real owner, a real HTTP receiver standing for the
intruder's. On the old code the victim's runs went to the journal the planted file named, the
journal's files were shared with the intruder's group, and the owner posted the victim's
``run_failed`` notices, error text included, to the intruder's receiver.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from letitloop.journal._config import tool_table
from letitloop.journal._trust import UntrustedConfigWarning, distrust
from tests.helpers import child_env
from tests.notify.receiver import Receiver
from tests.trust.local_users import User, as_user, throwaway_user

VICTIM = r"""
import json, sys, warnings
from pathlib import Path
warnings.simplefilter("always")
from letitloop import durable, step
from letitloop.journal._config import find_location, share_group
from letitloop.journal._outbox import load_config
from letitloop.kernel._limits import configured

where = find_location()
seen = {
    "journal": str(where),
    "limits": sorted(configured()),
    "notify": getattr(load_config(Path.cwd()), "url", None),
    "group": share_group(Path(where)) if not isinstance(where, str) else None,
}
print(json.dumps(seen), flush=True)

def charge():
    raise RuntimeError("card 4242 declined for customer erin")

@durable(run_id=sys.argv[1])
def bill():
    step("charge", charge)

try:
    bill()
except RuntimeError:
    pass
"""


@pytest.fixture
def intruder() -> Iterator[User]:
    with throwaway_user("lilplant") as user:
        yield user


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder like /tmp: root's, sticky, writable by everyone."""
    path = Path(tempfile.mkdtemp(prefix="lil-shared-"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        from tests.conftest import _kill_owner

        for journal in path.rglob("journal.duckdb"):
            _kill_owner(journal)
        shutil.rmtree(path, ignore_errors=True)


def _plant(intruder: User, shared: Path, url: str) -> Path:
    """As the intruder: a journal box of its own and a pyproject.toml that asks for everything."""
    planted = shared / "pyproject.toml"
    text = (
        "[tool.letitloop]\n"
        'journal = "box/journal.duckdb"\n'
        f'share_with_group = "{intruder.name}"\n'
        "[tool.letitloop.notify]\n"
        f'url = "{url}"\n'
        "[tool.letitloop.limits]\n"
        '"openai" = { rpm = 1 }\n'
    )
    code = (
        "import os\n"
        f"os.mkdir({str(shared / 'box')!r}, 0o777); os.chmod({str(shared / 'box')!r}, 0o777)\n"
        f"open({str(planted)!r}, 'w').write({text!r})\n"
    )
    done = as_user(intruder, code)
    assert done.returncode == 0, done.stderr
    assert planted.stat().st_uid == intruder.uid
    return planted


def _victim(cwd: Path, run_id: str) -> tuple[dict[str, object], str]:
    env = child_env(LIL_SHARE_GROUP="")
    env = {k: v for k, v in env.items() if not k.startswith(("LIL_JOURNAL", "LIL_NOTIFY"))}
    done = subprocess.run(
        [sys.executable, "-c", VICTIM, run_id],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[0]), done.stderr


def _got_within(receiver: Receiver, seconds: float) -> list[tuple[dict[str, str], bytes]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not receiver.deliveries():
        time.sleep(0.1)
    return receiver.deliveries()


@pytest.mark.timeout(240)
def test_a_file_planted_above_a_folder_without_a_project_gets_nothing(
    shared: Path, intruder: User
) -> None:
    """The victim works in shared/work (no project marker): the planted file names neither the
    journal, nor the group that shares it, nor the receiver of notices, nor a rate limit; the
    warning names the file; the intruder cannot read the journal the victim really used."""
    receiver = Receiver()
    try:
        planted = _plant(intruder, shared, receiver.url)
        work = shared / "work"
        work.mkdir(mode=0o755)
        seen, err = _victim(work, "planted-1")
        got = _got_within(receiver, 8.0)
        assert got == [], f"the intruder received the victim's notice: {got[0][1]!r}"
        assert seen["journal"] == str(work / ".letitloop" / "journal.duckdb"), seen
        assert (seen["limits"], seen["notify"], seen["group"]) == ([], None, None), seen
        assert "UntrustedConfigWarning" in err and str(planted) in err, err[-2000:]
        assert "belongs to" in err and intruder.name in err, err[-2000:]
        assert not (shared / "box" / "journal.duckdb").exists()
        # a second run, now that .letitloop/ marks shared/work as a project, reads nothing above
        seen, _ = _victim(work, "planted-2")
        assert (seen["limits"], seen["notify"], seen["group"]) == ([], None, None), seen
        journal = work / ".letitloop" / "journal.duckdb"
        assert stat.S_IMODE(journal.stat().st_mode) & 0o077 == 0, oct(journal.stat().st_mode)
        peek = as_user(intruder, f"print(len(open({str(journal)!r}, 'rb').read(64)))")
        assert peek.returncode != 0 and "PermissionError" in peek.stderr, peek
        assert receiver.deliveries() == []
    finally:
        receiver.close()


@pytest.mark.timeout(240)
def test_notify_and_limits_are_never_read_beyond_the_project_root(
    shared: Path, intruder: User
) -> None:
    """The victim's project (shared/proj, with its own pyproject.toml) declares no notify or
    limits table: the planted parent's tables are not taken instead. Once the project declares
    its own receiver, its notices go there and still nowhere else."""
    theirs, ours = Receiver(), Receiver()
    try:
        _plant(intruder, shared, theirs.url)
        project = shared / "proj"
        project.mkdir(mode=0o755)
        (project / "pyproject.toml").write_text('[project]\nname = "billing"\n')
        seen, _ = _victim(project, "proj-1")
        got = _got_within(theirs, 8.0)
        assert got == [], f"the intruder received the victim's notice: {got[0][1]!r}"
        assert seen["journal"] == str(project / ".letitloop" / "journal.duckdb"), seen
        assert (seen["limits"], seen["notify"]) == ([], None), seen

        from tests.conftest import _kill_owner

        _kill_owner(project / ".letitloop" / "journal.duckdb")  # the next owner reads anew
        (project / "pyproject.toml").write_text(
            f'[project]\nname = "billing"\n[tool.letitloop.notify]\nurl = "{ours.url}"\n'
        )
        seen, _ = _victim(project, "proj-2")
        assert seen["notify"] == ours.url, seen
        got = _got_within(ours, 30.0)
        assert got and b"proj-2" in got[0][1], got
        assert theirs.deliveries() == []
    finally:
        theirs.close()
        ours.close()


def test_foreign_and_group_writable_files_are_refused_with_the_reason(
    tmp_path: Path, intruder: User
) -> None:
    """Each rule on real files and owners: another user's file, a file or folder writable by
    others (or by a group with other members), a link to another user's file; the user's own
    file in a sticky shared folder, and in its private group, is trusted."""
    project = tmp_path / "proj"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.letitloop.notify]\nurl = "http://127.0.0.1:9/x"\n')
    assert distrust(pyproject) is None
    assert tool_table("notify", project)[0]["url"] == "http://127.0.0.1:9/x"

    os.chown(pyproject, intruder.uid, intruder.gid)
    with pytest.warns(UntrustedConfigWarning, match=f"{pyproject}.*belongs to {intruder.name}"):
        assert tool_table("notify", project) == ({}, None)
    os.chown(pyproject, 0, 0)

    pyproject.chmod(0o646)
    assert distrust(pyproject) == "it is writable by every user"
    pyproject.chmod(0o664)
    os.chown(pyproject, 0, intruder.gid)  # a group the intruder is in
    assert "writable by the group" in str(distrust(pyproject))
    os.chown(pyproject, 0, 0)  # root's own private group: trusted
    assert distrust(pyproject) is None
    pyproject.chmod(0o644)

    project.chmod(0o777)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert tool_table("notify", project) == ({}, None)
    assert any("another user could replace it" in str(w.message) for w in caught), caught
    project.chmod(0o1777)  # sticky: an entry of root's cannot be replaced by others
    assert distrust(pyproject) is None
    project.chmod(0o755)

    elsewhere = tmp_path / "theirs.toml"
    elsewhere.write_text("[tool.letitloop]\n")
    os.chown(elsewhere, intruder.uid, intruder.gid)
    link = project / "link.toml"
    link.symlink_to(elsewhere)
    assert f"links to {elsewhere}" in str(distrust(link))
