"""Run leases on PostgreSQL: one holder per run, taken over after ``LIL_LEASE_TTL`` of silence.

A lease is the ``runs`` row's ``holder`` (the session), ``lease_token`` and ``heartbeat``, plus a
session-level advisory lock on (run, token) held by the holder's pinned connection. A killed
process's connection closes and its lock goes within milliseconds, so its runs are free at once;
a process that is frozen or cut off (SIGSTOP, a dead machine, a partition) keeps its connection
but stops heartbeating, and after the TTL another process takes the run with the next token.
Every write checks the token under the run's row lock (fencing): the frozen process, when it
wakes, is refused with ``LeaseLostError`` and writes nothing.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from letitloop.errors import LeaseLostError

if TYPE_CHECKING:
    from letitloop.journal.postgres._journal import PgJournal


def lost_error(run_id: str, lease: dict[str, Any], ttl: float) -> LeaseLostError:
    """The fenced process's error. ``lease`` is the run's lease row as this process found it
    (``holder``: the session holding it now, None once the new holder released it; ``status``:
    the run's status then), so it says who took over and what became of the run."""
    holder, status = lease.get("holder"), lease.get("status")
    taken = (
        f"this process lost its lease on run {run_id}: after it sent no heartbeat for {ttl:g} s, "
        f"{holder.split('/', 1)[0] if holder else 'another process'} took the run over "
        f"(lease token {lease.get('token')})"
    )
    if holder is None and status in ("completed", "failed", "cancelled", "suspended"):
        taken += f", and the run has been {status} there since"
    elif holder is None:
        taken += " and has let it go since"
    if holder is None and status == "completed":
        fix = f"nothing to redo: the run completed without this process (`lil runs show {run_id}`)"
    elif holder is None:
        fix = f"see what the run did with `lil runs show {run_id}`, and resume it from there"
    else:
        fix = "let the new holder finish"
    return LeaseLostError(
        f"{taken}; nothing was written, and this process stops executing the run",
        fix=f"{fix}; if this process was only slow, raise LIL_LEASE_TTL (seconds) for every "
        "process that uses the journal",
        run_id=run_id,
    )


def take_lock(cur: Any, run_id: str, token: int) -> bool:
    """Take the (run, token) advisory lock on this session without waiting."""
    row = cur.execute(
        "SELECT pg_try_advisory_lock(hashtext(%s), %s::int)", [run_id, token]
    ).fetchone()
    return bool(row and row[0])


def drop_lock(cur: Any, run_id: str, token: int) -> None:
    cur.execute("SELECT pg_advisory_unlock(hashtext(%s), %s::int)", [run_id, token])


class Heartbeat:
    """Refreshes the heartbeat of every lease the journal holds, every third of the TTL."""

    def __init__(self, journal: PgJournal) -> None:
        self.journal = journal
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="lil-pg-heartbeat", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        period = max(0.05, self.journal.ttl / 3)
        while not self.stop.wait(period):
            try:
                self.journal.beat()
            except Exception:  # the server is away: the next write reconnects and re-locks
                pass

    def close(self) -> None:
        self.stop.set()
