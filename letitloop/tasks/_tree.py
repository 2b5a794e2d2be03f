"""The task's working tree: snapshots before an attempt, what changed after, diffs, restores.

A snapshot maps each file under the root (relative POSIX path) to its sha256 and, for a text
file under ``MAX_TEXT`` bytes, its text, so a diff can be shown and an edit outside the allowed
paths can be put back. Directories that are never the agent's work (``.git``, ``.letitloop``,
caches, virtual environments) are skipped. A snapshot is saved to disk before an attempt runs,
so a runner killed mid-attempt compares against the tree as it was before the attempt began.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import time
from functools import cache
from pathlib import Path

SKIP_DIRS = frozenset(
    {".git", ".hg", ".letitloop", "__pycache__", ".venv", "venv", "node_modules", ".tox"}
    | {".mypy_cache", ".ruff_cache", ".pytest_cache", ".ipynb_checkpoints"}
)
MAX_TEXT = 1_000_000  # bytes: larger files are compared by hash only
MAX_FILES = 20_000

Snapshot = dict[str, tuple[str, "str | None"]]  # path -> (sha256, text or None)


def snapshot(root: Path) -> Snapshot:
    """Every file under ``root`` (skipping ``SKIP_DIRS``) with its hash and, if text, its text.

    A file whose size and mtime are those seen by an earlier snapshot in this process, and
    whose mtime is more than ``_RACY`` seconds older than this snapshot, is not read again
    (git's "racily clean" rule: an edit in the same clock tick as a snapshot is always seen).
    """
    out: Snapshot = {}
    started = time.time()
    top = os.fspath(root)
    stack = [""]
    while stack and len(out) < MAX_FILES:
        rel_dir = stack.pop()
        try:
            entries = sorted(os.scandir(os.path.join(top, rel_dir)), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        stack.append(rel)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            key = (entry.path, st.st_size, st.st_mtime_ns)
            seen = _seen.get(entry.path)
            if seen is not None and seen[0] == key and st.st_mtime < started - _RACY:
                out[rel] = seen[1]
                continue
            try:
                with open(entry.path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            item = (hashlib.sha256(data).hexdigest(), _text_of(data))
            _seen[entry.path] = (key, item)
            out[rel] = item
            if len(out) >= MAX_FILES:
                break
    return dict(sorted(out.items()))


_RACY = 2.0
_seen: dict[str, tuple[tuple[str, int, int], tuple[str, str | None]]] = {}


def _text_of(data: bytes) -> str | None:
    if len(data) > MAX_TEXT or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def save(snap: Snapshot, path: Path) -> None:
    """Write a snapshot durably (temp file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(snap))  # dumps uses the C encoder; dump(f) does not
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load(path: Path) -> Snapshot | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return {k: (v[0], v[1]) for k, v in raw.items()}


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths added, removed or modified between two snapshots, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def diff(before: Snapshot, after: Snapshot, paths: list[str]) -> str:
    """A unified diff of ``paths`` (binary files are named, not shown)."""
    parts: list[str] = []
    for p in paths:
        old, new = before.get(p), after.get(p)
        if (old and old[1] is None) or (new and new[1] is None):
            parts.append(f"Binary file {p} changed\n")
            continue
        a = (old[1] or "") if old else ""
        b = (new[1] or "") if new else ""
        parts.extend(
            difflib.unified_diff(
                a.splitlines(keepends=True),
                b.splitlines(keepends=True),
                "/dev/null" if old is None else f"a/{p}",
                "/dev/null" if new is None else f"b/{p}",
            )
        )
        if parts and not parts[-1].endswith("\n"):
            parts[-1] += "\n\\ No newline at end of file\n"
    return "".join(parts)


def restore(root: Path, before: Snapshot, paths: list[str]) -> list[str]:
    """Put ``paths`` back as they were in ``before`` (a file added since is removed); return
    those that cannot be (a binary file: its content is not kept)."""
    lost = []
    for p in paths:
        full = root / p
        old = before.get(p)
        if old is None:
            full.unlink(missing_ok=True)
        elif old[1] is None:
            lost.append(p)
        else:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(old[1], encoding="utf-8")
    return lost


def allowed(path: str, globs: tuple[str, ...]) -> bool:
    """Whether ``path`` matches one of the task's ``paths`` globs (``**`` spans directories,
    ``*`` does not; a glob naming a directory covers everything in it)."""
    return any(_glob(g).fullmatch(path) for g in globs)


@cache
def _glob(pattern: str) -> re.Pattern[str]:
    pattern = pattern.strip().removeprefix("./").rstrip("/")
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + "(?:/.*)?")
