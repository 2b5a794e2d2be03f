"""The task's working tree: snapshots before an attempt, what changed after, diffs, restores.

A snapshot maps each entry under the root (relative POSIX path) to its sha256 and, for a text
file under ``MAX_TEXT`` bytes, its text, so a diff can be shown and an edit outside the allowed
paths can be put back; a symbolic link is an entry of its own (``symlink:TARGET``, no text),
never followed. Directories that are never the agent's work (``.git``, ``.letitloop``, caches,
virtual environments) are skipped. A snapshot is saved to disk before an attempt runs, so a
runner killed mid-attempt compares against the tree as it was before the attempt began.

Every read and write goes through ``_files`` (one directory at a time, never through a link),
and a snapshot read back from ``.letitloop/tasks/`` is checked entry by entry before use.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import stat
import time
from functools import cache
from pathlib import Path

from letitloop.tasks import _files, _killpoints
from letitloop.tasks._files import SKIP_DIRS
from letitloop.tasks._model import TaskStateError

__all__ = ["SKIP_DIRS", "Snapshot", "changed", "diff", "load", "restore", "save", "snapshot"]

MAX_TEXT = 1_000_000  # bytes: larger files are compared by hash only
MAX_FILES = 20_000
MAX_STATE = 1 << 32  # bytes of one saved snapshot
LINK = "symlink:"  # the digest of a symbolic link entry: this, then the link's target

Snapshot = dict[str, tuple[str, "str | None"]]  # path -> (sha256 or LINK+target, text or None)


def is_link(entry: tuple[str, str | None] | None) -> bool:
    return entry is not None and entry[0].startswith(LINK)


def snapshot(root: Path) -> Snapshot:
    """Every file and link under ``root`` (skipping ``SKIP_DIRS``), walked through directory
    descriptors opened with ``O_NOFOLLOW``: a link is recorded, never entered or read through.

    A file whose device, inode, size and mtime are those seen by an earlier snapshot in this
    process, and whose mtime is more than ``_RACY`` seconds older than this snapshot, is not
    read again (git's "racily clean" rule: an edit in the same clock tick is always seen).
    """
    out: Snapshot = {}
    started = time.time()
    top = os.fspath(root)
    stack: list[tuple[str, int, list[str]]] = []
    _push(stack, "", _files.open_root(root))
    try:
        while stack and len(out) < MAX_FILES:
            rel_dir, fd, names = stack[-1]
            if not names:
                stack.pop()
                os.close(fd)
                continue
            name = names.pop()
            rel = f"{rel_dir}/{name}" if rel_dir else name
            st = _files.lstat_at(fd, name)
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode):
                try:
                    _push(stack, rel, os.open(name, _files._DIR, dir_fd=fd))
                except OSError:
                    pass
            elif stat.S_ISLNK(st.st_mode):
                try:
                    out[rel] = (LINK + os.readlink(name, dir_fd=fd), None)
                except OSError:
                    pass
            elif stat.S_ISREG(st.st_mode):
                item = _file_item(fd, name, (top, rel), st, started)
                if item is not None:
                    out[rel] = item
    finally:
        for _, fd, _ in stack:
            os.close(fd)
    return dict(sorted(out.items()))


def _push(stack: list[tuple[str, int, list[str]]], rel: str, fd: int) -> None:
    try:
        with os.scandir(fd) as it:
            names = sorted((e.name for e in it if e.name not in SKIP_DIRS), reverse=True)
    except OSError:
        os.close(fd)
        return
    stack.append((rel, fd, names))


def _file_item(
    fd: int, name: str, where: tuple[str, str], st: os.stat_result, started: float
) -> tuple[str, str | None] | None:
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    seen = _seen.get(where)
    if seen is not None and seen[0] == key and st.st_mtime < started - _RACY:
        return seen[1]
    try:
        f = os.open(name, _files._READ, dir_fd=fd)
    except OSError:
        return None
    try:
        now = os.fstat(f)
        if not stat.S_ISREG(now.st_mode):
            return None  # swapped for a FIFO or a device since the listing: not a file
        data = _files.read_fd(f, now.st_size)
    except OSError:
        return None
    finally:
        os.close(f)
    item = (hashlib.sha256(data).hexdigest(), _text_of(data))
    _seen[where] = (key, item)
    return item


_RACY = 2.0
_seen: dict[tuple[str, str], tuple[tuple[int, int, int, int], tuple[str, str | None]]] = {}


def _text_of(data: bytes) -> str | None:
    if len(data) > MAX_TEXT or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def save(root: Path, rel: str, snap: Snapshot) -> str:
    """Write a snapshot durably under the project (``_files.replace_file``: temp file, fsync,
    rename, no link followed); return the sha256 of what was written."""
    data = json.dumps(snap).encode()  # dumps uses the C encoder; dump(f) does not
    return _files.replace_file(root, rel, data, state=True, mode=0o600)


def load(root: Path, rel: str, digest: str | None = None) -> Snapshot | None:
    """A snapshot ``save`` wrote (None if there is none), every entry checked: a path that
    leaves the tree, a text that does not match its hash, a file whose sha256 is not
    ``digest`` (the one journaled with the attempt) is ``TaskStateError``, never used."""
    data = _files.read_file(root, rel, limit=MAX_STATE, state=True)
    if data is None:
        return None
    if digest is not None and hashlib.sha256(data).hexdigest() != digest:
        raise _altered(rel, "its sha256 is not the one journaled with the attempt")
    try:
        raw = json.loads(data)
    except ValueError:
        raise _altered(rel, "it is not JSON") from None
    if not isinstance(raw, dict) or len(raw) > MAX_FILES:
        raise _altered(rel, f"it is not a mapping of at most {MAX_FILES} paths")
    out: Snapshot = {}
    for path, value in raw.items():
        if not _files.inside_tree(path):
            raise _altered(rel, f"it names {path!r}, which is not a path inside the project")
        if not (isinstance(value, list) and len(value) == 2 and _valid_entry(*value)):
            raise _altered(rel, f"the entry of {path!r} is not a hash and a text")
        out[path] = (value[0], value[1])
    return out


def _valid_entry(digest: object, text: object) -> bool:
    if not isinstance(digest, str) or not (text is None or isinstance(text, str)):
        return False
    if digest.startswith(LINK):
        target = digest[len(LINK) :]
        return text is None and 0 < len(target) <= 4096 and "\0" not in target
    if not re.fullmatch("[0-9a-f]{64}", digest):
        return False
    try:
        return text is None or hashlib.sha256(text.encode("utf-8")).hexdigest() == digest
    except UnicodeEncodeError:
        return False


def _altered(rel: str, why: str) -> TaskStateError:
    return TaskStateError(
        f"the task runner's snapshot {rel} cannot be used: {why}",
        fix="something changed the runner's files under .letitloop/tasks/: `lil runs reset "
        "lil.task:NAME` starts the task over from the tree as it is",
    )


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths added, removed or modified between two snapshots, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def diff(before: Snapshot, after: Snapshot, paths: list[str]) -> str:
    """A unified diff of ``paths`` (binary files are named, not shown; links show targets)."""
    parts: list[str] = []
    for p in paths:
        old, new = before.get(p), after.get(p)
        if is_link(old) or is_link(new):
            shown = [_described(e) for e in (old, new)]
            parts.append(f"Symbolic link {p} changed: {shown[0]} -> {shown[1]}\n")
            continue
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


def _described(entry: tuple[str, str | None] | None) -> str:
    if entry is None:
        return "(none)"
    if is_link(entry):
        return f"link to {entry[0][len(LINK) :]!r}"
    return "a file"


def restore(root: Path, before: Snapshot, paths: list[str]) -> list[str]:
    """Put ``paths`` back as they were in ``before``; return those that cannot be (a binary
    file, whose content is not kept, or a path blocked by something the runner will not
    follow or remove).

    What was added since is removed first, deepest first (a link the agent put in place of a
    directory goes before the files under it are written back); then files and links are
    written back, shallowest first. A link or FIFO in the way is replaced, never followed.
    """
    lost = []
    gone = sorted((p for p in paths if p not in before), key=lambda p: -p.count("/"))
    back = sorted((p for p in paths if p in before), key=lambda p: p.count("/"))
    for p in gone:
        _files.remove(root, p)
        _killpoints.reached("restore")
    for p in back:
        old = before[p]
        try:
            if is_link(old):
                _files.make_link(root, p, old[0][len(LINK) :])
            elif old[1] is None:
                lost.append(p)
                continue
            else:
                _files.write_file(root, p, old[1].encode("utf-8"))
        except TaskStateError:
            lost.append(p)
        _killpoints.reached("restore")
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
