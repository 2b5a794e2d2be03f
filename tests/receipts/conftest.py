"""Throwaway git repositories for receipt tests (never the project's own repository)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

KEY = "test-receipt-key-0123456789abcdef"
OTHER_KEY = "another-receipt-key-fedcba9876543210"
PY = sys.executable

BILLING = '''\
import functools


@functools.cache
def charge(amount: int, currency: str = "EUR", *, retries: int = 3) -> bool:
    """Charge an amount."""
    return amount > 0


class Handler:
    def post(self, body: dict) -> int:
        return 200

    def get(self) -> int:
        return 200
'''

CHECK = """\
import sys
sys.path.insert(0, "src")
from billing import charge
ok = charge(5)
print("charge(5) ->", ok)
sys.exit(0 if ok else 1)
"""

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str] | None = None) -> str:
    """Write ``files`` (path -> text) and commit everything; the new commit's id."""
    for name, text in (files or {}).items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(autouse=True)
def _no_receipt_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LIL_RECEIPT_KEY", "LIL_RECEIPT_SIGNING_KEY", "LIL_RECEIPT_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A git repository with src/billing.py and check.py, in one commit."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "base", {"src/billing.py": BILLING, "check.py": CHECK})
    yield root
