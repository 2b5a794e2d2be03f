"""What every ``lil`` command shares: the journal and --json options, errors, small parsers.

Only click is imported at module level; the kernel's client is imported when a command runs, so
``lil --help`` stays fast and never imports duckdb (only the owner process does).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from letitloop.errors import LetItLoopError

if TYPE_CHECKING:
    from letitloop.journal._contract import Journal
    from letitloop.journal.duckdb._client import OwnerJournal

F = TypeVar("F", bound=Callable[..., Any])

_JOURNAL_KEY = "lil.journal"
HUGE = 1_000_000  # "no limit" for listings


class LilError(click.ClickException):
    """A library error shown as ``error: <message>`` and ``  fix: <fix>``, with exit code 1."""

    exit_code = 1

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.fix = fix

    @classmethod
    def wrap(cls, exc: LetItLoopError) -> LilError:
        return cls(exc.message, exc.fix)

    def show(self, file: Any = None) -> None:
        text = f"error: {self.message}"
        if self.fix:
            text += f"\n  fix: {self.fix}"
        click.echo(text, err=True)


class LilGroup(click.Group):
    """The root group: loads command modules on first use (``lazy`` maps a name to
    ``(module, attribute, short help)``, so ``lil --help`` imports none of them) and turns
    ``LetItLoopError`` (and plain OS errors) into a clean message."""

    def __init__(
        self, *args: Any, lazy: Mapping[str, tuple[str, str, str]] | None = None, **kwargs: Any
    ):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            module, attr, _ = self.lazy[name]
            self.add_command(getattr(import_module(module), attr), name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy[name][2]) for name in sorted(self.lazy)]
        rows += [
            (n, c.get_short_help_str()) for n, c in self.commands.items() if n not in self.lazy
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LetItLoopError as exc:
            raise LilError.wrap(exc) from None
        except BrokenPipeError:  # the reader went away (`lil runs list | head`): stop quietly
            _stdout_to_devnull()
            raise SystemExit(141) from None  # 128 + SIGPIPE, as a process killed by it
        except OSError as exc:
            raise LilError(
                f"{type(exc).__name__}: {exc}",
                fix="check the journal path and its permissions (`lil journal doctor`)",
            ) from None


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises nothing more."""
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _remember_journal(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.meta[_JOURNAL_KEY] = value  # meta is shared by the whole context chain


def journal_option(fn: F) -> F:
    """``--journal PATH``: accepted on the group and on every command (the last one wins)."""
    return click.option(
        "--journal",
        metavar="PATH",
        expose_value=False,
        callback=_remember_journal,
        help="Journal file or directory. Default: $LIL_JOURNAL, else found from the current "
        "directory (pyproject.toml [tool.letitloop], then .letitloop/ in the project root).",
    )(fn)


def json_option(fn: F) -> F:
    """``--json``: machine-readable output on stdout instead of tables."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(fn)


def journal_spec() -> str | None:
    """The --journal value given on the command line, if any."""
    return click.get_current_context().meta.get(_JOURNAL_KEY)


def journal_path() -> Path:
    """The journal file this invocation works on (``journal._config.find_journal`` rules)."""
    from letitloop.journal._config import find_journal

    return find_journal(journal_spec())


def open_cli_journal() -> Journal:
    """The journal this invocation names: a DuckDB file's owner-backed client (starting its
    owner if none runs), or a PostgreSQL journal for a ``postgresql://`` URL. A journal file
    that does not exist is an error saying where it was looked for (nothing is created)."""
    from letitloop.journal import open_journal
    from letitloop.journal._config import find_location

    found = find_location(journal_spec())
    if not isinstance(found, str):
        require_journal(found)
    return open_journal(journal_spec())


def require_journal(path: Path) -> None:
    """Raise, creating nothing, when ``path`` holds no journal: say which path was looked for,
    why that one, and how a journal is found."""
    if path.exists():
        return
    spec = journal_spec()
    why = (
        f"--journal {spec}"
        if spec is not None
        else "$LIL_JOURNAL"
        if os.environ.get("LIL_JOURNAL")
        else f"found from {Path.cwd()}"
    )
    from letitloop.errors import ConfigError

    raise ConfigError(
        f"no journal at {path} ({why}): nothing has been journaled there yet",
        fix="run a durable workflow from this project first, or point at an existing journal "
        "with --journal PATH or $LIL_JOURNAL. Without them, the journal is [tool.letitloop] "
        "journal in the nearest pyproject.toml, else .letitloop/journal.duckdb in the project "
        "root (the nearest folder with .letitloop/, pyproject.toml or .git), else in the current "
        "directory",
    )


def open_owner_journal() -> OwnerJournal:
    """The owner-backed client of a DuckDB journal, for what only its owner has (stats, sql)."""
    from letitloop.journal.duckdb._client import open_journal

    require_journal(journal_path())
    return open_journal(journal_path())


def who() -> str:
    """The default ``by`` of resets and resolutions: user@host."""
    from letitloop.journal._config import who as kernel_who

    return kernel_who()


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """``30s``, ``30m``, ``12h``, ``7d``, ``2w`` (or a bare number of seconds) as seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text.lower())
    if match is None:
        raise ValueError(f"{text!r} is not a duration like 30m, 12h or 7d")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


class Duration(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.2
    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def marker_ref(text: str) -> str | int:
    """A marker given on the command line: a position if it is all digits, else a name."""
    return int(text) if text.isdigit() else text


def owner_answers(sock_path: Path) -> bool:
    """True if something accepts connections on the owner's socket (never starts an owner)."""
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(2.0)
    try:
        sock.connect(str(sock_path))
        return True
    except OSError:
        return False
    finally:
        sock.close()
