"""Which configuration letitloop trusts: git's ``safe.directory`` model, for local users.

A ``pyproject.toml`` chooses where runs are journaled (``[tool.letitloop] journal``), who may
share the journal (``share_with_group``) and where notices of failed runs go
(``[tool.letitloop.notify]``). Another local user who can put such a file above the working
folder (``/tmp`` is writable by everyone) would receive the runs or the notices. So a project
marker or configuration file counts only when it is *trusted*:

- it belongs to the current user or to root (a symbolic link: the link and its target);
- nobody else may write it: not writable by others, and not by its group unless that group is
  the user's own private group (``useradd -U``, ``umask 002``);
- nobody else may replace it: the folder holding it obeys the same two rules, or is sticky
  (``/tmp``: others cannot rename or delete what is not theirs) and the entry is the user's or
  root's.

Anything else is ignored, as if absent, with an ``UntrustedConfigWarning`` naming the file and
why; ``LIL_JOURNAL`` and ``LIL_NOTIFY_URL`` in the environment still choose explicitly.
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path


class UntrustedConfigWarning(UserWarning):
    """A configuration file or project marker letitloop ignored: another user could write it."""


def distrust(path: Path) -> str | None:
    """Why ``path`` (a file or folder that exists) may not configure letitloop; None if it may."""
    if not hasattr(os, "geteuid"):  # no POSIX owners (Windows): nothing to compare
        return None
    try:
        entry = os.lstat(path)
        holder = os.stat(path.parent)
    except OSError as exc:
        return f"it cannot be examined ({exc.strerror or exc})"
    if entry.st_uid not in _trusted_uids():
        return f"it belongs to {_user(entry.st_uid)}, not to you ({_user(os.geteuid())}) or root"
    if holder.st_uid not in _trusted_uids():
        return f"its folder {path.parent} belongs to {_user(holder.st_uid)}"
    why = _writable_by_others(holder)
    if why and not holder.st_mode & stat.S_ISVTX:  # sticky (/tmp): only owners may replace
        return f"its folder {path.parent} {why}, so another user could replace it"
    if stat.S_ISLNK(entry.st_mode):
        real = Path(os.path.realpath(path))
        why_real = distrust(real) if real != path else "it is a link to itself"
        return None if why_real is None else f"it links to {real}, and {why_real}"
    why = _writable_by_others(entry)
    return f"it {why}" if why else None


def trusted(path: Path) -> bool:
    """Whether ``path`` may configure letitloop; warns, naming it and why, when it may not."""
    why = distrust(path)
    if why is not None:
        warnings.warn(
            f"letitloop ignores {path}: {why}. Configuration there could send your runs or "
            "notifications to another user. If it is yours, fix its owner and mode "
            "(chown, chmod go-w); or set LIL_JOURNAL / LIL_NOTIFY_URL explicitly",
            UntrustedConfigWarning,
            stacklevel=3,
        )
    return why is None


def _trusted_uids() -> tuple[int, int]:
    return (os.geteuid(), 0)


def _writable_by_others(st: os.stat_result) -> str:
    """How someone else may write a file or folder with this status ('' if nobody may)."""
    if st.st_mode & stat.S_IWOTH:
        return "is writable by every user"
    if st.st_mode & stat.S_IWGRP and not _own_private_group(st.st_gid):
        return f"is writable by the group {_group(st.st_gid)}"
    return ""


def _own_private_group(gid: int) -> bool:
    """The user's primary group when nobody else is listed in it (a user private group)."""
    if gid != os.getegid():
        return False
    import grp
    import pwd

    try:
        members = set(grp.getgrgid(gid).gr_mem)
        me = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return False
    return members <= {me}


def _user(uid: int) -> str:
    import pwd

    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _group(gid: int) -> str:
    import grp

    try:
        return f"{grp.getgrgid(gid).gr_name} (gid {gid})"
    except KeyError:
        return f"gid {gid}"
