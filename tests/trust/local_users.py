"""A second OS user for the "other local users" tests: created as root, removed afterwards.

The tests run as root (CI does); each creates a throwaway user with ``useradd`` and acts as it
in a child process that drops root's identity (``setgroups``/``setgid``/``setuid``) after its
imports, so nothing of the test's own identity helps it.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int


@contextmanager
def throwaway_user(prefix: str = "lilother") -> Iterator[User]:
    """A user with no home and no groups besides its own, deleted when the block ends."""
    if os.geteuid() != 0:
        pytest.fail("the other-user tests create a user with useradd: run them as root (CI does)")
    name = f"{prefix}{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "-M", "-U", name], check=True)
    try:
        entry = pwd.getpwnam(name)
        yield User(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=False)
        subprocess.run(["groupdel", name], check=False, stderr=subprocess.DEVNULL)


def as_user(user: User, code: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (Python) as ``user``: the child imports nothing of root's after it drops."""
    prelude = (
        "import os\n"
        f"os.setgroups([]); os.setgid({user.gid}); os.setuid({user.uid})\n"
        "assert os.getuid() != 0 and os.geteuid() != 0\n"
    )
    import sys

    return subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )
