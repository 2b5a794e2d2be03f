"""``lil splice``: replace, insert or delete one definition in a Python file, by qualified name.

Every byte outside the edited definition stays as it was. Each command prints the unified diff
(coloured on a terminal) and writes the file atomically (a temporary file in the same
directory, then ``os.replace``, keeping the file's mode and encoding) unless ``--dry-run``.
libcst is imported when a command runs, not when ``lil`` starts.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import LilError, journal_option, json_option, open_cli_journal, who
from letitloop.errors import LetItLoopError

if TYPE_CHECKING:
    from letitloop.splice._result import SpliceResult

FILE = click.Path(dir_okay=False, path_type=Path)
F = TypeVar("F", bound=Callable[..., None])


def label(path: str | Path) -> str:
    """How a diff names a file: its path relative to the working directory when the file is
    inside it (as ``git diff`` does, whether it was given as ``/abs/path`` or ``a/../b``),
    else its absolute path."""
    full = Path(os.path.abspath(path))
    try:
        return full.relative_to(Path.cwd()).as_posix()
    except (ValueError, OSError):
        return str(full)


def quiet_on_broken_pipe(fn: F) -> F:
    """A command whose reader went away (``lil splice replace ... --dry-run | head``) stops
    quietly with exit 0, as ``git diff | head`` does, instead of reporting an OSError: the
    reader saw what it wanted. Standard output is pointed at /dev/null so that the flush at
    exit cannot fail again."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
            sys.stdout.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):  # no real file descriptor (click's test runner)
                pass
            finally:
                os.close(devnull)
            raise SystemExit(0) from None

    return wrapper  # type: ignore[return-value]


@click.group()
def splice() -> None:
    """Replace, insert or delete one def or class.

    Edits one function, method or class by name and leaves every other byte of the file as
    it was (comments, blank lines, line endings, indentation).

    TARGET is a qualified name: func, Class.method, Outer.Inner.method, or
    outer.<locals>.inner for a nested function (outer.inner when unambiguous).

    \b
    Examples:
        lil splice targets app.py
        lil splice replace app.py Service.fetch --with fetch.py --dry-run
        lil splice insert app.py --after Service.fetch --with helper.py
        lil splice delete app.py old_helper
    """


class SourceFile:
    """A Python file read as text in its declared encoding, with its line endings untouched."""

    def __init__(self, path: Path) -> None:
        from letitloop.splice._files import read_source

        self.path = path
        self.text, self.encoding = read_source(path)

    def write(self, text: str) -> None:
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise LilError(
                f"the result cannot be written in {self.path}'s encoding ({self.encoding}): {exc}",
                fix="use characters the file's encoding has, or change its coding declaration",
            ) from None
        try:
            from letitloop.splice._files import write_atomically

            write_atomically(self.path, data)
        except OSError as exc:
            raise LilError(
                f"cannot write {self.path}: {exc.strerror or exc}",
                fix="check that the file and its directory are writable",
            ) from None


def read_new_code(spec: str) -> str:
    """The text of ``--with NEWFILE`` (``-`` reads standard input)."""
    from letitloop.splice._files import decode

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
    diff = result.diff_for(label(file.path))
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
@click.option(
    "--rename",
    is_flag=True,
    help="Allow the new code to give the definition another name (callers keep the old one).",
)
@choose_option
@json_option
@quiet_on_broken_pipe
def replace_cmd(
    file: Path,
    target: str,
    new_file: str,
    dry_run: bool,
    protect: tuple[str, ...],
    additive: bool,
    rename: bool,
    choose: int | None,
    as_json: bool,
) -> None:
    """Replace the definition TARGET in FILE with the code in NEWFILE.

    The target's leading comments, decorators and trailing comments are kept unless the new
    code brings its own. New code that names the definition differently is refused unless
    --rename is given (a dry run shows the diff and says so).

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
        rename=rename or dry_run,
    )
    report(source, result, dry_run, as_json)
    if len(result.changed) == 2 and not rename:
        old, new = result.changed
        click.echo(
            f"warning: the new code renames {old} to {new}; writing it needs --rename", err=True
        )


@splice.command("insert")
@click.argument("file", type=FILE)
@click.option("--after", metavar="TARGET", help="Insert right after this definition.")
@click.option("--before", metavar="TARGET", help="Insert right before this definition.")
@click.option("--into", metavar="CLASS", help="Insert at the end of this class's body.")
@with_option
@dry_run_option
@choose_option
@json_option
@quiet_on_broken_pipe
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
@quiet_on_broken_pipe
def delete_cmd(file: Path, target: str, dry_run: bool, choose: int | None, as_json: bool) -> None:
    """Delete the definition TARGET from FILE, with its leading comments and decorators.

    \b
    Example:
        lil splice delete app.py Service.old_fetch --dry-run
    """
    from letitloop.splice import delete

    source = SourceFile(file)
    report(source, delete(source.text, target, choose=choose), dry_run, as_json)


@splice.command("targets")
@click.argument("file", type=FILE)
@json_option
@quiet_on_broken_pipe
def targets_cmd(file: Path, as_json: bool) -> None:
    """List the qualified names of FILE's functions, methods and classes.

    \b
    Example:
        lil splice targets app.py
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


@splice.command("source")
@click.argument("file", type=FILE)
@click.argument("target")
@choose_option
@quiet_on_broken_pipe
def source_cmd(file: Path, target: str, choose: int | None) -> None:
    """Print the source of TARGET in FILE, exactly as it is (comments and decorators too).

    \b
    Example:
        lil splice source app.py Service.fetch > fetch.py
    """
    from letitloop.splice import source_of

    click.echo(source_of(SourceFile(file).text, target, choose=choose), nl=False)


# -- proposals: an agent proposes, a person decides ------------------------------------------


@splice.command("list")
@click.option(
    "--state",
    type=click.Choice(["pending", "applied", "rejected", "conflict"]),
    help="Only proposals in this state.",
)
@json_option
@journal_option
@quiet_on_broken_pipe
def list_cmd(state: str | None, as_json: bool) -> None:
    """List splice proposals: id, state, file, target, who proposed it and why.

    \b
    Example:
        lil splice list --state pending
    """
    from letitloop.splice import list_proposals

    found = list_proposals(state, journal=open_cli_journal())
    if as_json:
        from letitloop.operate import proposal_json

        out.emit_json([proposal_json(p) for p in found])
        return
    table = out.make_table("id", "state", "file", "target", "by", "proposed", "reason")
    for p in found:
        table.add_row(p.id, p.state, p.path, p.target, p.by, out.ago(p.created), p.reason)
    out.say(table)


@splice.command("show")
@click.argument("proposal")
@json_option
@journal_option
@quiet_on_broken_pipe
def show_cmd(proposal: str, as_json: bool) -> None:
    """Show a proposal: its state and the change it makes, as a diff against the file now.

    \b
    Example:
        lil splice show 3fa9c2
    """
    from letitloop.splice import get_proposal, replace

    p = get_proposal(proposal, journal=open_cli_journal())
    if as_json:
        from letitloop.operate import proposal_json

        out.emit_json(proposal_json(p))
        return
    out.say(out.text(f"proposal {p.id}: {p.state}", "bold"), out.text(f"{p.target} in {p.path}"))
    out.say(out.text(f"by {p.by} {out.ago(p.created)}: {p.reason or '(no reason given)'}"))
    if p.decided_by:
        out.say(out.text(f"{p.state} by {p.decided_by} {out.ago(p.decided_at)}"))
    try:
        show_diff(replace(SourceFile(Path(p.path)).text, p.target, p.code).diff_for(label(p.path)))
    except LetItLoopError as exc:
        out.say(out.text(f"does not apply to the file as it is now: {exc.message}"))


@splice.command("apply")
@click.argument("proposal")
@click.option("--by", metavar="NAME", help="Who applies it (default: user@host).")
@json_option
@journal_option
@quiet_on_broken_pipe
def apply_cmd(proposal: str, by: str | None, as_json: bool) -> None:
    """Apply a pending proposal: only if its target is unchanged, else it is marked a conflict.

    \b
    Example:
        lil splice apply 3fa9c2
    """
    from letitloop.operate import apply_splice
    from letitloop.splice import get_proposal

    journal = open_cli_journal()
    path = get_proposal(proposal, journal=journal).path
    done = apply_splice(journal, proposal, by=by or who(), diff_path=label(path))
    if as_json:
        out.emit_json(done.to_json() | {"applied": proposal})
        return
    show_diff(done.data["diff"])
    out.say(out.text(done.message, "bold"))


@splice.command("reject")
@click.argument("proposal")
@click.option("--comment", help="Why (kept with the decision).")
@click.option("--by", metavar="NAME", help="Who rejects it (default: user@host).")
@json_option
@journal_option
@quiet_on_broken_pipe
def reject_cmd(proposal: str, comment: str | None, by: str | None, as_json: bool) -> None:
    """Reject a pending proposal (with a comment for whoever proposed it).

    \b
    Example:
        lil splice reject 3fa9c2 --comment "keep the retry loop"
    """
    from letitloop.operate import proposal_json, reject_splice
    from letitloop.splice import get_proposal

    journal = open_cli_journal()
    done = reject_splice(journal, proposal, by=by or who(), comment=comment)
    if as_json:
        out.emit_json(proposal_json(get_proposal(str(done.data["proposal_id"]), journal=journal)))
        return
    out.say(out.text(done.message, "bold"))
