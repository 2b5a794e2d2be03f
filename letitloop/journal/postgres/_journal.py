"""``PgJournal``: the Journal contract on PostgreSQL, reached directly (no owner process).

Every write is one transaction that locks the run's row, rebuilds (or reuses) the run's state,
runs the shared state machine (``journal._state``) over the records exactly as the owner and
the memory journal do, projects the accepted ones into the tables (``_writes``) and commits.
An acknowledged write (``sync=True``) is durable when the call returns; records nobody waits
for (a step's start, a cache entry) commit with ``synchronous_commit=off`` and become durable
with the next synchronous commit. When the server goes away (restart, failover), calls
reconnect, take their leases back and resend: records keep their natural keys, so a resend of
a write that did commit is recognized and dropped.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg

from letitloop.errors import (
    JournalError,
    JournalUnavailableError,
    LetItLoopError,
    RunLockedError,
)
from letitloop.journal._config import env_float
from letitloop.journal._contract import (
    Encoded,
    Notice,
    RunState,
)
from letitloop.journal._records import (
    JOURNAL_KINDS,
    Record,
)
from letitloop.journal._state import (
    JournalState,
    RunEntry,
    run_state,
)
from letitloop.journal._writes import RecordWrites
from letitloop.journal.postgres import _connection, _limits, _reads, _schema, _waits
from letitloop.journal.postgres._decisions import PgDecisions
from letitloop.journal.postgres._journal_reads import PgReads
from letitloop.journal.postgres._leases import Heartbeat, drop_lock, lost_error, take_lock
from letitloop.journal.postgres._listen import Follower, Notifier
from letitloop.journal.postgres._queues import PgQueues
from letitloop.journal.postgres._writes import HOT_SYNC, HOT_UNWAITED, hot_params, project

T = TypeVar("T")
HOLD_DELAY = 0.05  # unwaited records are written within this, or with the next write
CACHED_RUNS = 64  # states of released runs kept (a run called again needs no load)
_journals: dict[str, PgJournal] = {}
_journals_lock = threading.Lock()


def open_journal(url: str) -> PgJournal:
    """The process-wide journal object for a ``postgresql://`` URL."""
    with _journals_lock:
        journal = _journals.get(url)
        if journal is None or journal.closed or journal.pid != os.getpid():
            journal = _journals[url] = PgJournal(url)
        return journal


class PgJournal(PgReads, PgDecisions, PgQueues, RecordWrites):
    """See the module docstring. Thread-safe: calls share one connection under a lock."""

    def __init__(self, url: str) -> None:
        self.where = _schema.parse_location(url)
        self.location = url
        self.ttl = env_float("LIL_LEASE_TTL", 30.0)
        self.connect_timeout = env_float("LIL_CONNECT_TIMEOUT", 30.0)
        self.write_timeout = env_float("LIL_WRITE_TIMEOUT", 120.0)  # any lock wait (_waits)
        self._hint: str | None = None  # the run the statement in flight may wait for
        self.closed = False
        self.pid = os.getpid()
        self.session = f"{os.getpid()}@{socket.gethostname()}/{os.urandom(6).hex()}"
        self._lock = threading.RLock()
        self._leases: dict[str, int] = {}  # run id -> the lease token this process holds
        self._lost: dict[str, dict[str, Any]] = {}  # runs taken over from us: later writes fail
        self._cache: dict[str, tuple[RunEntry, int]] = {}  # held runs: state and its rev
        self._conn: Any = None
        self._conn = self._connect(migrate=True)
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()
        self.journal_id = str(row[0]) if row else ""
        self._notifier: Notifier | None = None
        self._follower: Follower | None = None
        self._heartbeat: Heartbeat | None = None
        # accepted records nobody waits for (a step's start) of a held run, already applied to
        # its cached state: written with the next write, or after HOLD_DELAY by a timer
        self._held: list[Record] = []
        self._held_armed = threading.Event()  # wakes the flusher thread (started lazily)
        self._flusher: threading.Thread | None = None
        self._delivery = _limits.start_delivery(self)  # notifications, when configured

    # -- connections --------------------------------------------------------------------------

    def _connect(self, migrate: bool = False) -> Any:
        """A new autocommit connection on the journal's schema (migrating it on first use)."""
        return _connection.connect(self, migrate)

    def _fresh(self) -> Any:
        """A connection for a helper thread (notifier, follower)."""
        return self._connect()

    def _run(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn(connection)`` under the lock; on a lost server reconnect, re-lock, resend."""
        if self.closed:
            raise JournalError(f"journal {self.location} was closed")
        with self._lock:
            if os.getpid() != self.pid:  # forked: the parent's connection and leases are not ours
                raise JournalError(
                    "a PostgreSQL journal object cannot cross a fork",
                    fix="call letitloop.journal.open_journal(...) again in the child process",
                )
            failures = 0
            while True:
                self._hint = None
                try:
                    if self._conn is None or self._conn.closed:
                        self._reconnect()
                    return fn(self._conn)
                except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                    conn = self._conn
                    if conn is not None and not conn.closed and not _connection.broken(exc):
                        raise _connection.explain(self, exc, conn, operational=True) from None
                    self._drop_conn()
                    failures += 1
                    if failures > 20:
                        raise JournalUnavailableError(
                            f"lost the PostgreSQL journal {self.location} {failures} times "
                            f"in a row: {str(exc).strip()}",
                            fix="check the server's log; the call can be retried safely",
                        ) from None
                    time.sleep(min(1.0, 0.05 * failures))
                except psycopg.Error as exc:
                    raise _connection.explain(self, exc, self._conn) from None

    def _drop_conn(self) -> None:
        self._cache.clear()
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
        self._conn = None

    def _reconnect(self) -> None:
        """Connect again and take this process's leases back (their advisory locks died with
        the old connection); a lease someone took meanwhile is dropped: writes refuse it."""
        self._conn = self._connect()
        cur = self._conn.cursor()
        for run_id, token in list(self._leases.items()):
            row = cur.execute(
                "SELECT holder, lease_token FROM runs WHERE run_id = %s", [run_id]
            ).fetchone()
            if row and row[0] == self.session and row[1] == token and take_lock(cur, run_id, token):
                cur.execute(
                    "UPDATE runs SET heartbeat = now(), holder_pid = pg_backend_pid() "
                    "WHERE run_id = %s AND lease_token = %s",
                    [run_id, token],
                )

    def _poke(self) -> None:
        if self._notifier is None:
            self._notifier = Notifier(self._fresh, self.where.channel)
        self._notifier.poke()

    # -- runs and leases ----------------------------------------------------------------------

    def open_run(
        self,
        *,
        run_id: str,
        workflow: str,
        key: str,
        args: Encoded | None = None,
        entry: str | None = None,
        parent: str | None = None,
        lease: bool = True,
        lock_timeout: float = 0.0,
        reopen: bool = False,
        steps: bool = True,
        durable: bool = True,  # (always durable here)
    ) -> RunState:
        req: dict[str, Any] = {"run": run_id, "wf": workflow, "key": key, "lease": lease}
        req.update(args=list(args) if args else None, entry=entry, parent=parent, reopen=reopen)
        req["head"] = not steps  # a look without the steps (the state machine leaves them out)
        if self._held:
            self._flush()
        deadline = time.monotonic() + lock_timeout
        while True:
            try:
                wire = self._run(lambda conn: self._begin(conn, req))
                break
            except RunLockedError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                time.sleep(min(0.05, left))
        if wire is None:
            raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
        return run_state(wire)

    def _begin(self, conn: Any, req: dict[str, Any]) -> dict[str, Any] | None:
        run_id = req["run"]
        state = JournalState()
        if not req["lease"]:
            cur = conn.cursor()
            cached = self._cache.get(run_id)
            row = cur.execute("SELECT rev FROM runs WHERE run_id = %s", [run_id]).fetchone()
            if cached is not None and row is not None and row[0] == cached[1]:
                state.runs[run_id] = cached[0]  # nobody wrote since: no need to load it
                return state.begin(req, self.session)[0]
            try:
                entry, _ = _reads.load_entry(cur, run_id, self.ttl, lock=False)
            except KeyError:
                return None
            state.runs[run_id] = entry
            return state.begin(req, self.session)[0]
        new_token = None
        try:  # pipelined: statements wait only where a result is read (3 round trips, not 8)
            self._hint = run_id
            with conn.pipeline(), conn.transaction():
                cur = conn.cursor()
                cur.execute(_waits.GATE_SQL, [run_id])  # a row lock: no read-only role takes it
                lease = self._load(cur, state, run_id, fence=False)
                wire, recs = state.begin(req, self.session)
                if not recs:
                    return wire
                mine = lease.get("holder") == self.session and self._leases.get(
                    run_id
                ) == lease.get("token")
                token = int(lease.get("token") or 0)
                if not mine:
                    token += 1
                    while not take_lock(cur, run_id, token):  # a zombie of a recreated run
                        token += 1
                    new_token = token
                project(cur, recs)
                cur.execute(
                    "UPDATE runs SET holder = %s, holder_pid = pg_backend_pid(), lease_token = %s,"
                    " heartbeat = now(), rev = rev + 1 WHERE run_id = %s RETURNING rev",
                    [self.session, token, run_id],
                )
                rev = cur.fetchone()[0]
        except BaseException:
            if new_token is not None:
                try:
                    drop_lock(conn.cursor(), run_id, new_token)
                except Exception:
                    pass
            self._cache.pop(run_id, None)
            raise
        old = self._leases.get(run_id)
        if old is not None and old != token:
            drop_lock(conn.cursor(), run_id, old)
        self._leases[run_id] = token
        self._lost.pop(run_id, None)
        self._cache[run_id] = (state.runs[run_id], rev)
        if self._heartbeat is None:
            self._heartbeat = Heartbeat(self)
        self._poke()
        return wire

    def _load(self, cur: Any, state: JournalState, run_id: str, fence: bool) -> dict[str, Any]:
        """Put the run's state (locked for this transaction) into ``state``; with ``fence``,
        refuse if this process held the run's lease and someone took it over."""
        self._hint = run_id
        cached = self._cache.get(run_id)
        if cached is not None:  # valid while the run's rev is the one it was cached at
            row = cur.execute(
                "SELECT rev, holder, lease_token FROM runs WHERE run_id = %s FOR UPDATE", [run_id]
            ).fetchone()
            ours = run_id in self._leases and row is not None and row[1] == self.session
            if row is not None and row[0] == cached[1] and (ours or row[1] is None):
                state.runs[run_id] = cached[0]
                return {"rev": row[0], "holder": row[1], "token": row[2], "alive": ours}
        try:
            entry, lease = _reads.load_entry(cur, run_id, self.ttl, lock=True)
        except KeyError:
            self._cache.pop(run_id, None)
            return {}
        token = self._leases.get(run_id)
        if fence and token is None and run_id in self._lost:
            raise lost_error(run_id, self._lost[run_id], self.ttl)  # every later write too
        if token is not None and (lease["holder"] != self.session or lease["token"] != token):
            if fence:
                self._forget(run_id)
                self._lost[run_id] = {**lease, "status": entry.status}
                raise lost_error(run_id, self._lost[run_id], self.ttl)
        elif token is not None:
            entry.holder = self.session  # ours, even if a pause let the heartbeat age
        state.runs[run_id] = entry
        return lease

    def _forget(self, run_id: str) -> None:
        self._leases.pop(run_id, None)
        self._cache.pop(run_id, None)

    def release_run(self, run_id: str) -> None:
        if self._held:
            self._flush()
        token = self._leases.get(run_id)
        if token is None:
            return

        def release(conn: Any) -> None:
            with conn.pipeline():  # one round trip
                cur = conn.cursor()
                cur.execute(
                    "UPDATE runs SET holder = NULL, holder_pid = NULL, heartbeat = NULL, "
                    "rev = rev + 1 WHERE run_id = %s AND holder = %s AND lease_token = %s "
                    "RETURNING rev",
                    [run_id, self.session, token],
                )
                drop_lock(conn.cursor(), run_id, token)
                row = cur.fetchone()
            cached = self._cache.get(run_id)
            self._forget(run_id)
            if row is not None and cached is not None:  # kept: calling it again skips a load
                cached[0].holder = None
                self._cache[run_id] = (cached[0], row[0])
                self._trim_cache()

        try:
            self._run(release)
        finally:
            self._leases.pop(run_id, None)
        self._poke()

    def _trim_cache(self) -> None:
        """Keep the states of runs this process does not hold to the newest few."""
        idle = [r for r in self._cache if r not in self._leases]
        for run_id in idle[: max(0, len(idle) - CACHED_RUNS)]:
            del self._cache[run_id]

    def beat(self) -> None:
        """Refresh the heartbeat of every lease this process holds (the heartbeat thread)."""
        if not self._leases or self.closed:
            return
        held = dict(self._leases)

        def beat(conn: Any) -> None:
            conn.execute(
                "UPDATE runs SET heartbeat = now() WHERE holder = %s AND run_id = ANY(%s)",
                [self.session, list(held)],
            )

        self._run(beat)

    # -- writes -------------------------------------------------------------------------------

    def append(self, records: Sequence[Record], *, sync: bool = True) -> None:
        if not records:
            return
        with self._lock:
            if not sync and self._hold(list(records)):
                return
            held = self._take_held()
            self._run(lambda conn: self._append(conn, list(records), sync, held=held))
        self._poke()

    def _hold(self, records: list[Record]) -> bool:
        """Keep unwaited records of a held run for the next write (the caller holds the lock);
        False when they must be written now."""
        run_id = records[0].get("run") if isinstance(records[0], dict) else None
        if not self._fast(run_id, records) or (self._held and self._held[0]["run"] != run_id):
            return False
        assert isinstance(run_id, str)
        state = JournalState()
        state.runs[run_id] = self._cache[run_id][0]
        for rec in records:  # a conflict raises now, as a write would
            if state.check(rec, self.session):
                state.apply(rec)
                self._held.append(rec)
        if self._held and not self._held_armed.is_set():
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_loop, name="lil-pg-flush", daemon=True
                )
                self._flusher.start()
            self._held_armed.set()
        return True

    def _take_held(self) -> list[Record]:
        held, self._held = self._held, []
        return held  # the flusher stays armed: it disarms itself when it finds nothing held

    def _flush_loop(self) -> None:
        """The flusher thread: held records wait at most ``HOLD_DELAY`` for a write to carry
        them (one thread per journal, not one per record)."""
        while not self.closed:
            if not self._held_armed.wait(1.0):
                continue
            time.sleep(HOLD_DELAY)
            if self._held:
                self._flush()
            else:  # nothing held: disarm, then look again (a hold arms it after appending)
                self._held_armed.clear()
                if self._held:
                    self._held_armed.set()

    def _flush(self) -> None:
        """Write held records now (the timer; and before reads and lease changes)."""
        with self._lock:
            held = self._take_held()
            if not held or self.closed:
                return
            try:
                self._run(lambda conn: self._append(conn, [], False, held=held))
            except LetItLoopError:
                return  # not waited for: the next write of the run reports what is wrong
        self._poke()

    def _fast(self, run_id: object, records: list[Record]) -> bool:
        """Whether records can take the hot path: all of one run this process holds, with its
        state cached, and none of the journal-wide kinds nor a blackboard write (which others
        may have written since the state was cached: its versions are checked on a fresh one)."""
        if not isinstance(run_id, str) or run_id not in self._leases or run_id not in self._cache:
            return False
        return all(
            isinstance(r, dict)
            and r.get("run") == run_id
            and r.get("k") not in JOURNAL_KINDS
            and r.get("k") != "board"
            for r in records
        )

    def import_records(self, records: Sequence[Record]) -> None:
        """Write copied history (``lil journal copy``): checked like an append, without a lease
        (so a run some process holds is refused)."""
        if records:
            if self._held:
                self._flush()
            self._run(lambda conn: self._append(conn, list(records), True, history=True))
            self._poke()

    def _append(
        self,
        conn: Any,
        records: list[Record],
        sync: bool,
        history: bool = False,
        held: Sequence[Record] = (),
    ) -> None:
        if not history and self._append_held(conn, held, records, sync):
            return
        for rec in held:  # their runs' cached states have them applied: load what committed
            self._cache.pop(rec["run"], None)
        records = [*held, *records]  # checked again against the reloaded states
        session = None if history else self.session
        state = JournalState()
        accepted: list[Record] = []
        failure: LetItLoopError | None = None
        touched: list[str] = []
        try:
            with conn.pipeline(), conn.transaction():  # statements wait only to be read
                cur = conn.cursor()
                if not sync:
                    cur.execute("SET LOCAL synchronous_commit TO off")
                for rec in records:
                    run_id = rec.get("run") if isinstance(rec, dict) else None
                    if (
                        isinstance(run_id, str)
                        and rec.get("k") not in JOURNAL_KINDS
                        and run_id not in state.runs
                        and run_id not in touched
                    ):
                        touched.append(run_id)
                        self._load(cur, state, run_id, fence=True)
                    try:
                        if state.check(rec, session):
                            state.apply(rec)
                            accepted.append(rec)
                    except LetItLoopError as exc:
                        failure = exc  # earlier records of the call stand, as on the owner
                        break
                project(cur, accepted)
                revs = {}
                if touched:
                    cur.execute(
                        "UPDATE runs SET rev = rev + 1, heartbeat = CASE WHEN holder = %s THEN "
                        "now() ELSE heartbeat END WHERE run_id = ANY(%s) RETURNING run_id, rev",
                        [self.session, touched],
                    )
                    revs = dict(cur.fetchall())
        except BaseException:
            for run_id in touched:
                self._cache.pop(run_id, None)
            raise
        for run_id in touched:
            if run_id in self._leases and run_id in state.runs and run_id in revs:
                self._cache[run_id] = (state.runs[run_id], revs[run_id])
        if failure is not None:
            raise failure

    def _append_held(
        self, conn: Any, held: Sequence[Record], records: list[Record], sync: bool
    ) -> bool:
        """The hot path: records of one run this process holds, checked against its cached
        state and written in one round trip, fenced by ``lil_fence`` (no row read first).
        ``held`` records were checked and applied to that state already. False when it does
        not apply or the run changed meanwhile (the caller reloads)."""
        every = [*held, *records]
        run_id = every[0].get("run") if every and isinstance(every[0], dict) else None
        if not self._fast(run_id, every):
            return False
        assert isinstance(run_id, str)
        entry, rev = self._cache[run_id]
        state = JournalState()
        state.runs[run_id] = entry
        accepted: list[Record] = list(held)
        failure: LetItLoopError | None = None
        del self._cache[run_id]  # until the commit: the entry changes below
        for rec in records:
            try:
                if state.check(rec, self.session):
                    state.apply(rec)
                    accepted.append(rec)
            except LetItLoopError as exc:
                failure = exc
                break
        if not accepted:
            self._cache[run_id] = (entry, rev)
            if failure is not None:
                raise failure
            return True
        fence = [run_id, rev, self.session, self._leases[run_id]]
        hot = hot_params(accepted)
        try:
            if hot is not None:  # a step's records: one statement, one round trip
                conn.execute(HOT_SYNC if sync else HOT_UNWAITED, [*fence, *hot])
            else:
                with conn.pipeline(), conn.transaction():
                    cur = conn.cursor()
                    if not sync:
                        cur.execute("SET LOCAL synchronous_commit TO off")
                    cur.execute("SELECT lil_fence(%s, %s, %s, %s)", fence)
                    project(cur, accepted)
        except psycopg.Error as exc:
            if getattr(exc, "sqlstate", None) == _schema.STALE:
                return False  # someone wrote to the run (a decision, a cancel): reload
            raise
        self._cache[run_id] = (entry, rev + 1)
        if failure is not None:
            raise failure
        return True

    def _append_to_run(self, run_id: str, records: list[Record]) -> None:
        self.append(records)

    # -- shared rate limits and notifications (postgres._limits) -------------------------------

    def take_capacity(self, name: str, rpm: int | None, tpm: int | None, tokens: int = 0) -> float:
        return _limits.take(self, name, rpm, tpm, tokens)

    def adjust_capacity(self, name: str, tokens: int) -> None:
        _limits.adjust(self, name, tokens)

    def block_capacity(self, name: str, seconds: float) -> None:
        _limits.block(self, name, seconds)

    def capacity(self) -> list[dict[str, Any]]:
        return _limits.capacity(self)

    def notifications(self, *, state: str | None = None, limit: int = 100) -> list[Notice]:
        return _limits.notifications(self, state, limit)

    def retry_notification(self, key: str) -> None:
        _limits.retry(self, key)

    def close(self) -> None:
        if self.closed:
            return
        if self._delivery is not None:
            self._delivery.close()
        if self._held:
            self._flush()
        for run_id in list(self._leases):
            try:
                self.release_run(run_id)
            except LetItLoopError:
                pass
        self.closed = True
        self._held_armed.set()  # the flusher thread sees closed and ends
        for helper in (self._heartbeat, self._notifier, self._follower):
            if helper is not None:
                helper.close()
        self.close_queues()
        with self._lock:
            self._drop_conn()
