"""``lil journal doctor``: check, one by one, everything a journal needs, each with its fix."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from letitloop.cli import _output as out
from letitloop.cli._shared import journal_option, journal_spec, json_option

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

# File systems where flock, fsync or Unix sockets are unreliable for a journal.
REMOTE_FS = frozenset(
    "nfs nfs4 cifs smb smb3 smbfs sshfs 9p afs ceph glusterfs lustre gpfs davfs ncpfs".split()
)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None


def read_owner(path: Path, name: str, read: Callable[[Any], T]) -> T | Check:
    """What ``read`` gets from a fresh connection to the journal's owner, or the failing check
    ``name`` that says why the owner could not be asked."""
    from letitloop.errors import LetItLoopError
    from letitloop.journal.duckdb._client import OwnerJournal

    try:
        probe = OwnerJournal(path)
        try:
            return read(probe)
        finally:
            probe.close()
    except LetItLoopError as exc:
        return Check(name, False, exc.message, exc.fix)


def explain_journal(explicit: str | None) -> tuple[Path, str]:
    """The journal file and which discovery rule chose it (the rules are ``journal.locate``'s)."""
    from letitloop.journal import find_journal, locate

    return find_journal(explicit), locate(explicit)[1]


def _writable_dir(directory: Path) -> str | None:
    """None if a file can be created in ``directory`` (created if missing), else why not."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".lil-doctor-"):
            pass
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def mount_for(path: Path, mounts_file: str = "/proc/mounts") -> tuple[str, str] | None:
    """(mount point, file system type) holding ``path``, from /proc/mounts; None if unknown."""
    try:
        lines = Path(mounts_file).read_text().splitlines()
    except OSError:
        return None
    target = str(path.resolve())
    best: tuple[str, str] | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and (best is None or len(mount) >= len(best[0])):
            best = (mount, fields[2])
    return best


def check_filesystem(directory: Path, mounts_file: str = "/proc/mounts") -> Check:
    probe = directory if directory.exists() else next(p for p in directory.parents if p.exists())
    found = mount_for(probe, mounts_file)
    if found is None:
        return Check("local file system", True, "not checked: /proc/mounts is not readable")
    mount, fstype = found
    remote = fstype in REMOTE_FS or fstype.startswith(("fuse", "nfs"))
    detail = f"{fstype} mounted at {mount}"
    if remote:
        return Check(
            "local file system",
            False,
            detail + " is a network or FUSE file system",
            "put the journal on a local disk (set LIL_JOURNAL or [tool.letitloop] journal)",
        )
    return Check("local file system", True, detail)


def check_log(log_dir: Path) -> Check:
    """Every frame of every segment (from the start: the fold watermark is the owner's to
    check); a damaged frame other than a torn final one is corruption."""
    from letitloop.journal.duckdb.owner._log import SALVAGE_FIX, Log

    if not log_dir.is_dir():
        return Check("log segments", True, "no log yet")
    try:
        segments = sorted(p for p in log_dir.iterdir() if p.name.endswith(".wal"))
        total = sum(p.stat().st_size for p in segments)
        scan = Log(log_dir).scan(min((int(p.name[:-4]) for p in segments), default=0))
        if scan.damage:
            more = f" (and {len(scan.damage) - 1} more)" if scan.damage[1:] else ""
            return Check("log segments", False, scan.damage[0].describe() + more, SALVAGE_FIX)
    except OSError as exc:
        return Check(
            "log segments",
            False,
            f"{type(exc).__name__}: {exc}",
            f"make {log_dir} and its files readable by this user",
        )
    return Check("log segments", True, f"{len(segments)} segment(s), {out.size(total)}, readable")


def check_key_dir(journal_id: str | None) -> Check:
    from letitloop._keys import KEY_ENV, key_dir, key_path

    if os.environ.get(KEY_ENV):
        return Check("key directory", True, f"the journal key comes from ${KEY_ENV}")
    directory = key_path(journal_id).parent if journal_id else key_dir()
    problem = _writable_dir(directory)
    if problem:
        return Check(
            "key directory",
            False,
            f"{directory}: {problem}",
            f"make {directory} writable, or set LIL_KEY_DIR to a writable directory "
            f"(or ${KEY_ENV} to a hex key)",
        )
    return Check("key directory", True, f"{directory} is writable")


def run_checks(explicit: str | None) -> list[Check]:
    from letitloop.errors import LetItLoopError
    from letitloop.journal._config import JournalPaths

    try:
        path, why = explain_journal(explicit)
    except LetItLoopError as exc:
        return [Check("journal path", False, exc.message, exc.fix)]
    paths = JournalPaths(path)
    checks = [Check("journal path", True, f"{path} (chosen by {why})")]
    problem = _writable_dir(paths.root)
    checks.append(
        Check(
            "directory writable",
            not problem,
            problem or f"{paths.root} is writable",
            None if not problem else f"make {paths.root} writable or choose another journal",
        )
    )
    checks.append(check_filesystem(paths.root))
    if problem:
        return checks
    journal_id = _check_owner(path, checks)
    if journal_id is not None:
        from letitloop.cli._quarantine import check_quarantine

        checks.append(check_quarantine(path))
        from letitloop.cli._notify import check_notifications

        checks.append(check_notifications(path))
    checks.append(check_log(paths.log_dir))
    checks.append(check_key_dir(journal_id))
    return checks


def _check_owner(path: Path, checks: list[Check]) -> str | None:
    """Start (or reach) the owner and say hello on a fresh connection; check the protocol."""
    from letitloop.errors import JournalVersionError, LetItLoopError
    from letitloop.journal.duckdb import _wire
    from letitloop.journal.duckdb._client import OwnerJournal

    t0 = time.perf_counter()
    try:
        probe = OwnerJournal(path)  # not the cached journal: this says hello for real
    except JournalVersionError as exc:
        checks.append(Check("owner answers", True, "an owner answered hello"))
        checks.append(Check("protocol version", False, exc.message, exc.fix))
        return None
    except LetItLoopError as exc:
        checks.append(Check("owner answers", False, exc.message, exc.fix))
        return None
    ms = (time.perf_counter() - t0) * 1000
    try:
        stats = probe.stats()
    finally:
        probe.close()
    checks.append(
        Check(
            "owner answers",
            True,
            f"pid {probe.owner_pid} answered hello in {ms:.0f} ms "
            f"(timeout {probe.connect_timeout:.0f} s)",
        )
    )
    checks.append(
        Check(
            "protocol version",
            True,
            f"client and owner speak protocol {_wire.PROTOCOL} "
            f"(owner letitloop {stats.get('version')})",
        )
    )
    return probe.journal_id


def _salvage(as_json: bool) -> None:
    """Run the salvage and say what it did (before the checks, which then see its result)."""
    from letitloop.journal._config import JournalPaths, find_journal
    from letitloop.journal.duckdb.owner._salvage import salvage

    report = salvage(JournalPaths(find_journal(journal_spec())))
    if as_json:
        return  # the checks that follow say whether the journal works now
    if not report.damage:
        out.say(out.text("salvage: the log is not damaged; nothing to do", "green"))
        return
    for place in report.damage:
        out.say(out.text(f"salvage: damaged: {place}", "yellow"))
    out.say(
        out.text(
            f"salvage: kept {report.kept} intact record(s) after the fold watermark "
            f"{report.folded_lsn}; the damaged log is kept at {report.moved_to}",
            "bold",
        )
    )


@click.command("doctor")
@json_option
@journal_option
@click.option(
    "--retry-quarantined",
    "retry_q",
    is_flag=True,
    help="Fold the records the owner set aside again (after an upgrade that can).",
)
@click.option(
    "--salvage",
    is_flag=True,
    help="Keep every intact record of a damaged log (the damaged log is moved aside) and say "
    "what was lost; run it with no process using the journal.",
)
@click.option(
    "--drop-quarantined",
    "drop_q",
    metavar="LSN|all",
    help="Forget a record the owner set aside (its log position), or all of them.",
)
def doctor_cmd(
    as_json: bool, retry_q: bool = False, drop_q: str | None = None, salvage: bool = False
) -> None:
    """Check that the journal can work here; exit 1 if any check fails.

    Checks: which journal path is used and why, its directory is writable and on a local file
    system, its owner starts and answers in time with the same protocol version, its log
    segments are readable, and the key directory is writable.

    \b
    Example:
        lil journal doctor
        lil journal doctor --salvage
    """
    if salvage:
        _salvage(as_json)
    if retry_q or drop_q:
        from letitloop.cli import _quarantine
        from letitloop.journal._config import find_journal

        action = "drop" if drop_q else "retry"
        done = _quarantine.resolve(find_journal(journal_spec()), action, drop_q)
        if not as_json:
            _quarantine.say_resolved(action, done)
    checks = run_checks(journal_spec())
    failed = [c for c in checks if not c.ok]
    if as_json:
        out.emit_json({"ok": not failed, "checks": checks})
    else:
        for c in checks:
            out.say(out.check_mark(c.ok), out.text(f"{c.name}:", "bold"), out.text(c.detail))
            if c.fix and not c.ok:
                out.say(out.text(f"    fix: {c.fix}", "yellow"))
        summary = "all checks passed" if not failed else f"{len(failed)} check(s) failed"
        out.say(out.text(summary, "green" if not failed else "bold red"))
    if failed:
        raise SystemExit(1)
