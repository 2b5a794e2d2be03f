"""Where the journal lives and how its owner is reached.

The journal is found the way git finds its directory, first match wins:

1. an explicit ``journal=`` argument, then ``LIL_JOURNAL`` (a path, or a ``postgresql://`` URL
   for a PostgreSQL journal: see ``journal.postgres``);
2. ``[tool.letitloop] journal = "..."`` in the project root's ``pyproject.toml`` (relative to
   that file);
3. ``.letitloop/journal.duckdb`` in the project root: the nearest ancestor holding
   ``.letitloop/``, ``pyproject.toml`` or ``.git``;
4. ``.letitloop/journal.duckdb`` in the current directory.

Only trusted markers and files count (``journal._trust``: the user's or root's, writable by
nobody else), and configuration is read from the project root's ``pyproject.toml`` alone,
never from a folder above it: another local user who plants a ``pyproject.toml`` in ``/tmp``
gets nothing.

Beside the journal file live its lock (owner election), its log directory and the owner's
socket; the socket moves to a short runtime directory when the path would be too long.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from letitloop.errors import ConfigError
from letitloop.journal._trust import trusted

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

_MAX_SOCKET_PATH = 100  # AF_UNIX paths are limited to 108 bytes on Linux
_PROJECT_MARKERS = (".letitloop", "pyproject.toml", ".git")


class JournalPaths:
    """The files of one journal: the DuckDB store and everything its owner keeps beside it."""

    __slots__ = ("db",)

    def __init__(self, db: Path) -> None:
        self.db = db

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JournalPaths) and other.db == self.db

    def __hash__(self) -> int:
        return hash(self.db)

    def __repr__(self) -> str:
        return f"JournalPaths({str(self.db)!r})"

    @property
    def root(self) -> Path:
        return self.db.parent

    @property
    def lock(self) -> Path:
        return self.db.with_name(self.db.name + ".lock")

    @property
    def log_dir(self) -> Path:
        return self.db.with_name(self.db.name + ".log")

    @property
    def owner_log(self) -> Path:
        return self.db.with_name(self.db.name + ".owner.log")

    @property
    def pid_file(self) -> Path:
        return self.db.with_name(self.db.name + ".pid")

    @property
    def socket(self) -> Path:
        near = self.db.with_name(self.db.name + ".sock")
        if len(str(near)) <= _MAX_SOCKET_PATH:
            return near
        import hashlib
        import tempfile

        digest = hashlib.sha256(str(self.db).encode()).hexdigest()[:16]
        base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
        return Path(base) / f"letitloop-{os.getuid()}" / f"{digest}.sock"


def make_journal_dir(directory: Path) -> None:
    """Create a journal's directory. A new ``.letitloop/`` gets a ``.gitignore`` of ``*`` (as
    pytest and ruff do for their caches), so a project's journal never shows in ``git status``."""
    if directory.is_dir():
        return
    directory.mkdir(parents=True, exist_ok=True)
    if directory.name == ".letitloop":
        try:
            (directory / ".gitignore").write_text("# created by letitloop (the journal)\n*\n")
        except OSError:
            pass  # a read-only or odd filesystem: the journal matters, the ignore file does not


def _pyproject_journal(pyproject: Path) -> Path | str | None:
    """Read ``[tool.letitloop] journal`` without importing tomllib unless the file mentions it."""
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    if "letitloop" not in text:
        return None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{pyproject} is not valid TOML: {exc}",
            fix="correct the file, or set LIL_JOURNAL to choose the journal explicitly",
        ) from None
    value = data.get("tool", {}).get("letitloop", {}).get("journal")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"[tool.letitloop] journal in {pyproject} must be a path string, got {value!r}",
            fix='write e.g. journal = ".letitloop/journal.duckdb"',
        )
    if _URL.match(value):
        return _check_url(value)
    return (pyproject.parent / value).resolve()


_URL = re.compile(r"^[a-z][a-z0-9+.-]*://")


def _check_url(text: str) -> str:
    if not text.startswith(("postgresql://", "postgres://")):
        raise ConfigError(
            f"journal {text!r} is a URL of a kind letitloop cannot use",
            fix="use a DuckDB journal file such as .letitloop/journal.duckdb, or a "
            "postgresql://user@host/db URL",
        )
    return text


def find_journal(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """Return the DuckDB journal file to use, following this module's docstring's precedence."""
    found = find_location(explicit, cwd)
    if isinstance(found, str):
        raise ConfigError(
            f"journal {found!r} is a PostgreSQL URL, and this needs a local DuckDB journal file",
            fix="open it with letitloop.journal.open_journal (the runtime and `lil` commands do), "
            "or point LIL_JOURNAL at a file such as .letitloop/journal.duckdb",
        )
    return found


def find_location(
    explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None
) -> Path | str:
    """The journal to use: a DuckDB file's path, or a ``postgresql://`` URL (as a str)."""
    return locate(explicit, cwd)[0]


def locate(
    explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None
) -> tuple[Path | str, str]:
    """The journal to use and, in words, the rule that chose it (``lil journal doctor`` says
    it): the explicit location, ``LIL_JOURNAL``, ``[tool.letitloop] journal`` in the project
    root's pyproject.toml, ``.letitloop/journal.duckdb`` in the project root, else in ``cwd``."""
    chosen = explicit if explicit is not None else os.environ.get("LIL_JOURNAL") or None
    if chosen is not None:
        why = (
            "the --journal option"
            if explicit is not None
            else "the LIL_JOURNAL environment variable"
        )
        text = os.fspath(chosen)
        if _URL.match(text):
            return _check_url(text), why
        path = Path(text).expanduser()
        if path.is_dir():
            path = path / "journal.duckdb"
        return path.resolve(), why
    start = (cwd or Path.cwd()).resolve()
    root = project_root(start)
    if root is not None:
        pyproject = _pyproject(root)
        configured = _pyproject_journal(pyproject) if pyproject is not None else None
        if configured is not None:
            return configured, f"[tool.letitloop] journal in {pyproject}"
        marker = next(m for m in _PROJECT_MARKERS if (root / m).exists())
        return root / ".letitloop" / "journal.duckdb", f"the project root {root} (it has {marker})"
    own = start / ".letitloop"
    if own.exists() and not trusted(own):
        raise ConfigError(
            f"the journal's folder {own} may belong to another user (see the warning above)",
            fix="work in a folder of your own, or set LIL_JOURNAL to a journal of yours",
        )
    why = "no project root above the current directory, so the current directory"
    return own / "journal.duckdb", why


def project_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding a trusted project marker (``.letitloop``,
    ``pyproject.toml``, ``.git``); markers another user could have planted are skipped."""
    for folder in (start, *start.parents):
        present = [folder / m for m in _PROJECT_MARKERS if (folder / m).exists()]
        if present and any([trusted(marker) for marker in present]):
            return folder
    return None


def _pyproject(root: Path) -> Path | None:
    """The project root's ``pyproject.toml`` when there is one and it is trusted."""
    pyproject = root / "pyproject.toml"
    return pyproject if pyproject.is_file() and trusted(pyproject) else None


def share_group(journal: Path) -> str | None:
    """The group allowed to use a journal besides its owner's user, or None (the default).

    ``LIL_SHARE_GROUP``, else ``[tool.letitloop] share_with_group`` in the ``pyproject.toml``
    of the journal's project root (trusted, as for every setting). With a group, the journal's
    files are created group-readable and -writable and members of that group may connect to
    its owner; without one, only the user who runs the owner (and root) can (see
    docs/security.md).
    """
    name = os.environ.get("LIL_SHARE_GROUP") or None
    if name is not None:
        return name
    tool, pyproject = _tool(journal.parent, "share_with_group")
    value = tool.get("share_with_group")
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(
            f"[tool.letitloop] share_with_group in {pyproject} must be a group name, got {value!r}",
            fix='write e.g. share_with_group = "research"',
        )
    return value


def env_float(name: str, default: float) -> float:
    """A float setting from the environment, with a clear error when it is malformed."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not a number", fix=f"set {name} to a number of seconds or unset it"
        ) from None


def who() -> str:
    """``user@host``: who made a decision, when a front end does not say (CLI, widgets, TUI)."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def tool_table(section: str, start: Path) -> tuple[dict[str, Any], Path | None]:
    """``[tool.letitloop.<section>]`` (``limits``, ``notify``) of the ``pyproject.toml`` of the
    project root at or above ``start``, and that file; ``({}, None)`` when it has none. Never
    from beyond the project root, and never from a file another user could have written."""
    tool, pyproject = _tool(start, f"letitloop.{section}")
    table = tool.get(section)
    if table is None:
        return {}, None
    if not isinstance(table, dict):
        raise ConfigError(
            f"[tool.letitloop.{section}] in {pyproject} must be a table, got {table!r}"[:300],
            fix=f"write it as a [tool.letitloop.{section}] section",
        )
    return table, pyproject


def _tool(start: Path, needle: str) -> tuple[dict[str, Any], Path | None]:
    """``[tool.letitloop]`` of the trusted project root's ``pyproject.toml`` at or above
    ``start``, and that file (TOML is parsed only when the text mentions ``needle``)."""
    root = project_root(start)
    pyproject = _pyproject(root) if root is not None else None
    if pyproject is None:
        return {}, None
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return {}, None
    if needle not in text:
        return {}, pyproject
    import tomllib

    try:
        tool = tomllib.loads(text).get("tool", {}).get("letitloop", {})
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject} is not valid TOML: {exc}", fix="correct the file") from None
    return (tool if isinstance(tool, dict) else {}), pyproject
