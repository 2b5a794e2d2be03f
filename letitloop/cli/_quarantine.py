"""The quarantine part of ``lil journal doctor``: records the owner could not fold.

An owner that cannot fold a record into DuckDB (one written by another version, or damaged)
sets it aside instead of dying; this module shows those records, naming the runs they belong
to, and resolves them: ``--retry-quarantined`` folds them again (after an upgrade that can),
``--drop-quarantined LSN|all`` forgets them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from letitloop.cli import _output as out


def check_quarantine(path: Path) -> Any:
    """A doctor ``Check``: fails while the owner holds records it could not fold."""
    from letitloop.cli._doctor import Check, read_owner

    rows = read_owner(path, "quarantine", lambda j: j.quarantine()["rows"])
    if isinstance(rows, Check):
        return rows
    if not rows:
        return Check("quarantine", True, "no record was set aside")
    runs = sorted({r[1] for r in rows if r[1]})
    lines = "; ".join(describe(r) for r in rows[:5]) + (" ..." if len(rows) > 5 else "")
    return Check(
        "quarantine",
        False,
        f"{len(rows)} record(s) could not be folded and were set aside"
        + (f" (runs affected: {', '.join(runs)})" if runs else "")
        + f": {lines}",
        "upgrade letitloop and run `lil journal doctor --retry-quarantined`, or drop them with "
        "`lil journal doctor --drop-quarantined LSN` (or `all`); an affected run may show "
        "fewer steps than it ran",
    )


def describe(row: list[Any]) -> str:
    lsn, run_id, kind, error, at, size = row
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    what = f"{kind or '?'} record of run {run_id or '?'} ({size} B, {when})"
    return f"log position {lsn}: {what}: {error}"


def resolve(path: Path, action: str, which: str | None) -> dict[str, Any]:
    """Drop or retry one quarantined record (``which`` an lsn) or all of them (None/"all")."""
    from letitloop.errors import ConfigError
    from letitloop.journal.duckdb._client import open_journal

    lsn: int | None = None
    if which not in (None, "all"):
        try:
            lsn = int(str(which))
        except ValueError:
            raise ConfigError(
                f"--{action}-quarantined takes a log position or 'all', got {which!r}",
                fix="see the positions with `lil journal doctor`",
            ) from None
    done: dict[str, Any] = open_journal(path).quarantine(action, lsn)["done"]
    return done


def say_resolved(action: str, done: dict[str, Any]) -> None:
    verb = "dropped" if action == "drop" else "folded"
    out.say(out.text(f"{verb} {len(done['resolved'])} quarantined record(s)", "bold"))
    for lsn, why in done["failed"]:
        out.say(out.text(f"  still quarantined: log position {lsn}: {why}", "yellow"))
