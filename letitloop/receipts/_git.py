"""What git says about the code a command ran against, and files at other revisions.

``facts`` records the commit, its tree, and whether (and how) the working tree differs from it:
the SHA-256 of ``git diff --binary HEAD`` plus every untracked, not ignored file. Nothing here
changes the repository: no index writes (``GIT_OPTIONAL_LOCKS=0``), no objects.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from letitloop.receipts._errors import GitError

_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def git(args: list[str], cwd: str | os.PathLike[str], *, check: bool = True) -> bytes | None:
    """``git ARGS`` in ``cwd``: its stdout, or None when it fails and ``check`` is False."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=cwd,
            capture_output=True,
            env={**os.environ, **_ENV},
            check=False,
        )
    except FileNotFoundError:
        raise GitError(
            "git is not installed (or not on PATH)", fix="install git, or run outside CI"
        ) from None
    if done.returncode != 0:
        if not check:
            return None
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(
            f"`git {' '.join(args)}` failed in {os.fspath(cwd)}: "
            f"{message[-1] if message else 'exit ' + str(done.returncode)}",
            fix="run inside the repository, and fetch the revisions you name "
            "(in CI: actions/checkout with fetch-depth: 0)",
        )
    return done.stdout


def _text(out: bytes | None) -> str | None:
    return out.decode().strip() if out is not None else None


def repo_root(cwd: str | os.PathLike[str]) -> Path | None:
    """The top of the git work tree holding ``cwd``, or None outside a repository."""
    top = _text(git(["rev-parse", "--show-toplevel"], cwd, check=False))
    return Path(top) if top else None


def head(cwd: str | os.PathLike[str]) -> str | None:
    """The commit checked out in ``cwd`` (None outside a repository or before the first commit)."""
    return _text(git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd, check=False))


def resolve(rev: str, cwd: str | os.PathLike[str]) -> str:
    """The full commit id ``rev`` names; ``GitError`` if it names none here."""
    out = _text(git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd, check=False))
    if not out:
        raise GitError(
            f"{rev!r} is not a commit in the repository at {os.fspath(cwd)}",
            fix="check the revision, and fetch it first (in CI: actions/checkout with "
            "fetch-depth: 0, or `git fetch origin REV`)",
        )
    return out


def show(rev: str, path: str, cwd: str | os.PathLike[str]) -> str | None:
    """The text of ``path`` (relative to the repository root) at ``rev``, or None if it does
    not exist there."""
    commit = resolve(rev, cwd)
    out = git(["show", f"{commit}:{path}"], cwd, check=False)
    return out.decode("utf-8", errors="surrogateescape") if out is not None else None


def facts(cwd: str | os.PathLike[str]) -> dict[str, Any] | None:
    """``{"commit", "tree", "dirty", "diff_sha256"}`` for ``cwd``, or None outside git."""
    root = repo_root(cwd)
    if root is None:
        return None
    commit = head(root)
    tree = _text(git(["rev-parse", "HEAD^{tree}"], root, check=False)) if commit else None
    digest = hashlib.sha256()
    diff = git(["diff", "--binary", "HEAD"], root, check=False) if commit else b""
    digest.update(diff or b"")
    untracked = git(["ls-files", "--others", "--exclude-standard", "-z"], root, check=False)
    names = sorted(n for n in (untracked or b"").split(b"\0") if n)
    for name in names:
        digest.update(b"\0untracked\0" + name + b"\0")
        try:
            digest.update(hashlib.sha256((root / os.fsdecode(name)).read_bytes()).digest())
        except OSError:
            digest.update(b"(unreadable)")
    dirty = bool(diff) or bool(names)
    return {
        "commit": commit,
        "tree": tree,
        "dirty": dirty,
        "diff_sha256": "sha256:" + digest.hexdigest() if dirty else None,
    }
