"""``lil journal doctor --salvage``: keep every intact record of a damaged log, say what was lost.

The owner refuses to serve a journal whose log is damaged (a bad frame with intact ones after
it, a segment cut short or deleted, the log directory gone): cutting there would silently drop
acknowledged records. Salvage, run while no owner serves the journal (it takes the owner's
lock), moves the damaged log aside untouched (``<journal>.log.damaged-<time>``), writes every
intact record after DuckDB's fold watermark into a fresh log starting at that watermark, and
reports each damaged place. The next owner replays the fresh log as after any crash.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from letitloop.errors import JournalError
from letitloop.journal._config import JournalPaths
from letitloop.journal.duckdb import _files
from letitloop.journal.duckdb.owner._log import Log, frame, fsync_dir


@dataclass
class Salvage:
    """What salvage found and did."""

    folded_lsn: int
    kept: int = 0  # intact records written to the fresh log
    damage: list[str] = field(default_factory=list)
    torn_tail: bool = False
    moved_to: Path | None = None


def _folded_lsn(db: Path) -> int:
    if not db.exists():
        return 0
    import duckdb  # the doctor, holding the owner's lock, is the only process opening it

    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT folded_lsn FROM fold_state").fetchone()
    except duckdb.CatalogException:
        return 0
    finally:
        con.close()
    return int(row[0]) if row else 0


def salvage(paths: JournalPaths) -> Salvage:
    """Rewrite a damaged log as described in the module docstring; a healthy log is left as is."""
    lock = _files.open_regular(paths.lock, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise JournalError(
                f"an owner is serving the journal {paths.db}; salvage needs it stopped",
                fix="run `lil journal stop` (and stop the processes using the journal), then "
                "salvage again",
            ) from None
        report = Salvage(_folded_lsn(paths.db))
        scan = Log(paths.log_dir).scan(report.folded_lsn)
        report.damage = [d.describe() for d in scan.damage]
        report.torn_tail = scan.torn is not None
        if not scan.damage:
            return report  # nothing lost: an owner cuts a torn tail by itself
        report.moved_to = paths.log_dir.with_name(
            f"{paths.log_dir.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"
        )
        os.rename(paths.log_dir, report.moved_to)
        fresh = Log(paths.log_dir)
        name = fresh.path / f"{report.folded_lsn:020d}.wal"
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            for _, payload in scan.records:
                data = frame(payload)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(fresh.path)
        report.kept = len(scan.records)
        return report
    finally:
        os.close(lock)
