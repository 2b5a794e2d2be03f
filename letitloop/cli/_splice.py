"""``lil splice``: replace, insert or delete one definition in a Python file, by qualified name.

Every byte outside the edited definition stays as it was. Each command prints the unified diff
(coloured on a terminal) and writes the file atomically (a temporary file in the same
directory, then ``os.replace``, keeping the file's mode and encoding) unless ``--dry-run``.
libcst is imported when a command runs, not when ``lil`` starts.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
import tokenize
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import LilError, json_option

if TYPE_CHECKING:
    from letitloop.splice._result import SpliceResult

FILE = click.Path(dir_okay=False, path_type=Path)


@click.group()
def splice() -> None:
    """Replace, insert or delete one def or class.

    Edits one function, method or class by name and leaves every other byte of the file as
    it was (comments, blank lines, line endings, indentation).

    TARGET is a qualified name: func, Class.method, Outer.Inner.method, or
    outer.<locals>.inner for a nested function (outer.inner when unambiguous).

    \b
    Examples:
        lil splice list app.py
        lil splice replace app.py Service.fetch --with fetch.py --dry-run
        lil splice insert app.py --after Service.fetch --with helper.py
        lil splice delete app.py old_helper
    """


class SourceFile:
    """A Python file read as text in its declared encoding, with its line endings untouched."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise LilError(
                f"cannot read {path}: {exc.strerror or exc}", fix="check the path"
            ) from None
        self.text, self.encoding = decode(data, str(path))

    def write(self, text: str) -> None:
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise LilError(
                f"the result cannot be written in {self.path}'s encoding ({self.encoding}): {exc}",
                fix="use characters the file's encoding has, or change its coding declaration",
            ) from None
        try:
            write_atomically(self.path, data)
        except OSError as exc:
            raise LilError(
                f"cannot write {self.path}: {exc.strerror or exc}",
                fix="check that the file and its directory are writable",
            ) from None


def decode(data: bytes, name: str) -> tuple[str, str]:
    """Text and encoding of Python source bytes (PEP 263 declaration or BOM, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise LilError(
            f"cannot decode {name}: {exc}",
            fix="save the file as UTF-8, or declare its encoding (# -*- coding: ... -*-)",
        ) from None


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (the file a symlink points to) via a temporary file in the
    same directory and ``os.replace``, keeping the file's permission bits."""
    real = Path(os.path.realpath(path))
    mode = stat.S_IMODE(os.stat(real).st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".lil-splice", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(real.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_new_code(spec: str) -> str:
    """The text of ``--with NEWFILE`` (``-`` reads standard input)."""
    if spec == "-":
        return decode(sys.stdin.buffer.read(), "standard input")[0]
    try:
        data = Path(spec).read_bytes()
    except OSError as exc:
        raise LilError(
            f"cannot read the new code from {spec}: {exc.strerror or exc}",
            fix="pass --with a file holding the new definition, or --with - to read stdin",
        ) from None
    return decode(data, spec)[0]


def show_diff(diff: str) -> None:
    """The diff on stdout: coloured on a terminal, exactly as text otherwise."""
    if not out.is_tty():
        click.echo(diff, nl=False)
        return
    styles = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))
    for line in diff.replace("\r\n", "\n").replace("\r", "\n").splitlines():
        style = next((s for prefix, s in styles if line.startswith(prefix)), None)
        out.say(out.text(line, style))


VERBS = {"replace": "replaced", "insert": "inserted", "delete": "deleted"}


def report(file: SourceFile, result: SpliceResult, dry_run: bool, as_json: bool) -> None:
    """Print the diff (or JSON), then write the file unless this is a dry run."""
    diff = result.diff_for(str(file.path))
    write = not dry_run and not result.unchanged
    if write:
        file.write(result.source)
    if as_json:
        out.emit_json(
            {
                "file": str(file.path),
                "operation": result.kind,
                "changed": list(result.changed),
                "dry_run": dry_run,
                "written": write,
                "diff": diff,
            }
        )
        return
    if result.unchanged:
        out.say(f"no change: {file.path} already has that code")
        return
    show_diff(diff)
    names = ", ".join(result.changed) or "code"
    if dry_run:
        message = f"dry run: would {result.kind} {names} in {file.path}; nothing written"
        out.say(out.text(message, "yellow"))
    else:
        out.say(out.text(f"{VERBS.get(result.kind, result.kind)} {names} in {file.path}", "green"))


def with_option(fn: Any) -> Any:
    return click.option(
        "--with",
        "new_file",
        required=True,
        metavar="NEWFILE",
        help="File holding the new code (any indentation); - reads standard input.",
    )(fn)


def dry_run_option(fn: Any) -> Any:
    return click.option(
        "--dry-run", is_flag=True, help="Print the diff but do not write the file."
    )(fn)


def choose_option(fn: Any) -> Any:
    return click.option(
        "--choose",
        type=click.IntRange(min=1),
        metavar="N",
        help="When several definitions share TARGET: the N-th, or the one holding line N.",
    )(fn)


@splice.command("replace")
@click.argument("file", type=FILE)
@click.argument("target")
@with_option
@dry_run_option
@click.option(
    "--protect",
    multiple=True,
    metavar="QUALNAME",
    help="A definition whose signature must not change (repeatable).",
)
@click.option(
    "--additive", is_flag=True, help="Only allow new parameters with defaults, *args, **kwargs."
)
@choose_option
@json_option
def replace_cmd(
    file: Path,
    target: str,
    new_file: str,
    dry_run: bool,
    protect: tuple[str, ...],
    additive: bool,
    choose: int | None,
    as_json: bool,
) -> None:
    """Replace the definition TARGET in FILE with the code in NEWFILE.

    The target's leading comments and decorators are kept unless the new code brings its
    own.

    \b
    Examples:
        lil splice replace app.py Service.fetch --with fetch.py --dry-run
        lil splice replace app.py Service.fetch --with fetch.py --protect Service.fetch
        lil splice replace app.py handler --with new.py --additive --json
    """
    from letitloop.splice import replace

    source = SourceFile(file)
    result = replace(
        source.text,
        target,
        read_new_code(new_file),
        protect=protect,
        policy="additive" if additive else None,
        choose=choose,
    )
    report(source, result, dry_run, as_json)


@splice.command("insert")
@click.argument("file", type=FILE)
@click.option("--after", metavar="TARGET", help="Insert right after this definition.")
@click.option("--before", metavar="TARGET", help="Insert right before this definition.")
@click.option("--into", metavar="CLASS", help="Insert at the end of this class's body.")
@with_option
@dry_run_option
@choose_option
@json_option
def insert_cmd(
    file: Path,
    after: str | None,
    before: str | None,
    into: str | None,
    new_file: str,
    dry_run: bool,
    choose: int | None,
    as_json: bool,
) -> None:
    """Insert the code in NEWFILE into FILE, next to a definition (or at the end).

    \b
    Examples:
        lil splice insert app.py --after Service.fetch --with helper.py
        lil splice insert app.py --into Service --with method.py --dry-run
    """
    if sum(x is not None for x in (after, before, into)) > 1:
        raise LilError(
            "give at most one of --after, --before and --into",
            fix="name one anchor, or none to append at the end of the file",
        )
    from letitloop.splice import insert

    source = SourceFile(file)
    result = insert(
        source.text, read_new_code(new_file), after=after, before=before, into=into, choose=choose
    )
    report(source, result, dry_run, as_json)


@splice.command("delete")
@click.argument("file", type=FILE)
@click.argument("target")
@dry_run_option
@choose_option
@json_option
def delete_cmd(file: Path, target: str, dry_run: bool, choose: int | None, as_json: bool) -> None:
    """Delete the definition TARGET from FILE, with its leading comments and decorators.

    \b
    Example:
        lil splice delete app.py Service.old_fetch --dry-run
    """
    from letitloop.splice import delete

    source = SourceFile(file)
    report(source, delete(source.text, target, choose=choose), dry_run, as_json)


@splice.command("list")
@click.argument("file", type=FILE)
@json_option
def list_cmd(file: Path, as_json: bool) -> None:
    """List the qualified names of FILE's functions, methods and classes.

    \b
    Example:
        lil splice list app.py
    """
    from letitloop.splice import list_targets

    targets = list_targets(SourceFile(file).text)
    if as_json:
        out.emit_json(targets)
        return
    if not targets:
        out.say(f"{file} defines no function or class")
        return
    table = out.make_table("target", "kind", "lines", "choose", keep=("target", "lines"))
    for t in targets:
        lines = f"{t.first_line}-{t.end_line}"
        table.add_row(out.text(t.qualname), t.kind, lines, str(t.choose or "-"))
    out.say(table)


@splice.command("show")
@click.argument("file", type=FILE)
@click.argument("target")
@choose_option
def show_cmd(file: Path, target: str, choose: int | None) -> None:
    """Print the source of TARGET in FILE, exactly as it is (comments and decorators too).

    \b
    Example:
        lil splice show app.py Service.fetch > fetch.py
    """
    from letitloop.splice import source_of

    click.echo(source_of(SourceFile(file).text, target, choose=choose), nl=False)
