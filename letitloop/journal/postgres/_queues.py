"""Queued runs on PostgreSQL: the pattern DBOS and others use, on the journal's own tables.

A claim is one transaction: the worker's row is refreshed (its heartbeat, by the server's clock),
the queues with fleet-wide limits are locked ``FOR UPDATE`` (so two workers never both take the
last free slot), and the items are picked ``FOR UPDATE SKIP LOCKED`` (concurrent claims never
wait for each other's rows): queued ones, and those held by a worker whose heartbeat is older
than its TTL. An enqueue wakes idle workers with ``NOTIFY`` from a thread of its own (never
inside the writing transaction), and an idle worker waits on ``LISTEN``, so a claim follows an
enqueue in milliseconds; the wait is bounded, so a lost notification costs one idle period.

A recoverable run's item is *held* by the session of the process that executes it (the run
lease's holder). A claim first puts back in the queue the held items whose run lease that
session no longer holds alive (``LEASE_ALIVE``: its advisory lock went with a killed process's
connection, or its heartbeat is older than the TTL), then claims as above.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from letitloop.errors import JournalError
from letitloop.journal._queue_wire import items_of
from letitloop.journal._queues import (
    OUTCOMES,
    QueueInfo,
    QueueItem,
    QueueSpec,
    WorkerInfo,
    bounded_ttl,
    check_spec,
)

if TYPE_CHECKING:
    from letitloop.journal.postgres._listen import Notifier

MIGRATION = """
CREATE TABLE lil_queues(
  name text PRIMARY KEY, concurrency int, per_worker int, limit_n int, period float8 NOT NULL,
  priority boolean NOT NULL, paused boolean NOT NULL DEFAULT false);
CREATE TABLE lil_queue_items(
  run_id text PRIMARY KEY, queue text NOT NULL, workflow text NOT NULL, run_key text NOT NULL,
  priority int NOT NULL, state text NOT NULL, enqueued float8 NOT NULL, claimed_by text,
  claimed_at float8, claims int NOT NULL DEFAULT 0, finished float8, outcome text, entry text,
  args_codec text, args bytea);
CREATE INDEX lil_queue_items_open ON lil_queue_items(queue, priority, enqueued)
  WHERE state <> 'finished';
CREATE INDEX lil_queue_items_holder ON lil_queue_items(claimed_by) WHERE state = 'claimed';
CREATE TABLE lil_workers(
  worker text PRIMARY KEY, host text NOT NULL, pid int NOT NULL, queues text[] NOT NULL,
  concurrency int NOT NULL, started float8 NOT NULL, beat float8 NOT NULL, ttl float8 NOT NULL,
  state text NOT NULL);
"""
_NOW = "extract(epoch from clock_timestamp())"
_ITEM_COLS = (
    "i.run_id, i.queue, i.workflow, i.run_key, i.priority, i.state, i.enqueued, i.claimed_by, "
    "i.claimed_at, i.claims, i.finished, i.outcome, i.entry, i.args_codec, i.args"
)
_LIVE = "w.beat > {now} - w.ttl"
# held items whose holder no longer holds its run's lease alive (see _reads.LEASE_ALIVE; the
# advisory locks are read once, not once per item)
_ORPHANED_HOLDS = (
    "WITH live AS MATERIALIZED (SELECT l.classid, l.objid FROM pg_locks l WHERE "
    "l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.database = "
    "(SELECT oid FROM pg_database WHERE datname = current_database())), "
    "gone AS (SELECT i.run_id FROM lil_queue_items i LEFT JOIN runs r ON r.run_id = i.run_id "
    "WHERE i.state = 'held' AND (%(q)s::text[] IS NULL OR i.queue = ANY(%(q)s)) AND NOT "
    "coalesce(r.holder = i.claimed_by AND r.heartbeat > now() - make_interval(secs => %(ttl)s) "
    "AND EXISTS (SELECT 1 FROM live WHERE live.classid = (hashtext(r.run_id)::bigint & "
    "4294967295)::oid AND live.objid = (r.lease_token & 4294967295)::oid), false) "
    "FOR UPDATE OF i SKIP LOCKED) "
    "UPDATE lil_queue_items i SET state = 'queued', claimed_by = NULL, claimed_at = NULL "
    "FROM gone WHERE i.run_id = gone.run_id"
)


class PgQueues:
    """The ``QueueJournal`` role of ``PgJournal``."""

    where: Any
    session: str
    ttl: float
    _waker: Notifier | None = None
    _listener: Any = None

    def _run(self, fn: Callable[[Any], Any]) -> Any:
        raise NotImplementedError  # PgJournal

    def _fresh(self) -> Any:
        raise NotImplementedError  # PgJournal

    @property
    def _channel(self) -> str:
        return f"lil_queue_{self.where.schema}"

    def enqueue(self, spec: QueueSpec, item: QueueItem) -> bool:
        check_spec(spec)

        def go(conn: Any) -> bool:
            with conn.transaction():
                _declare(conn, spec)
                args = item.args or (None, None)
                row = conn.execute(
                    "INSERT INTO lil_queue_items (run_id, queue, workflow, run_key, priority, "
                    "state, enqueued, entry, args_codec, args) VALUES "
                    f"(%s, %s, %s, %s, %s, 'queued', {_NOW}, %s, %s, %s) "
                    "ON CONFLICT (run_id) DO NOTHING RETURNING run_id",
                    [item.run_id, spec.name, item.workflow, item.key, item.priority]
                    + [item.entry, args[0], args[1]],
                ).fetchone()
            return row is not None

        new = bool(self._run(go))
        if new:
            if self._waker is None:
                from letitloop.journal.postgres._listen import Notifier  # here: at the top, a cycle

                wake = "lil-pg-queue-wake"  # at once: idle workers wait on it
                self._waker = Notifier(self._fresh, self._channel, delay=0.0, name=wake)
            self._waker.wanted.set()
        return new

    def claim(self, worker: WorkerInfo, n: int) -> list[QueueItem]:
        def go(conn: Any) -> list[QueueItem]:
            with conn.transaction():
                now = _beat(conn, worker)
                if worker.state == "draining" or n <= 0:
                    return []
                conn.execute(_ORPHANED_HOLDS, {"q": list(worker.queues) or None, "ttl": self.ttl})
                return _claim(conn, worker, min(n, 1000), now)

        return list(self._run(go))

    def beat_worker(self, worker: WorkerInfo) -> list[str]:
        def go(conn: Any) -> list[str]:
            with conn.transaction():
                _beat(conn, worker)
                held = {  # held still, or finished by this worker since it said what it holds
                    r[0]
                    for r in conn.execute(
                        "SELECT run_id FROM lil_queue_items WHERE run_id = ANY(%s) AND "
                        "claimed_by = %s AND state IN ('claimed', 'finished')",
                        [list(worker.runs), worker.worker],
                    ).fetchall()
                }
            return [r for r in worker.runs if r not in held]

        return list(self._run(go))

    def finish_item(self, worker: str, run_id: str, outcome: str) -> bool:
        if outcome not in OUTCOMES:
            raise JournalError(f"a queue item's outcome must be one of {sorted(OUTCOMES)}")
        if outcome == "released":
            sql = (
                "UPDATE lil_queue_items SET state = 'queued', claimed_by = NULL, "
                "claimed_at = NULL WHERE run_id = %s AND state = 'claimed' AND claimed_by = %s"
            )
            params: list[Any] = [run_id, worker]
        else:
            sql = (
                f"UPDATE lil_queue_items SET state = 'finished', finished = {_NOW}, outcome = %s "
                "WHERE run_id = %s AND state IN ('claimed', 'held') AND claimed_by = %s"
            )
            params = [outcome, run_id, worker]
        done = bool(self._run(lambda conn: conn.execute(sql, params).rowcount))
        if done and outcome == "released" and self._waker is not None:
            self._waker.wanted.set()
        return done

    def leave_worker(self, worker: str) -> None:
        def go(conn: Any) -> None:
            with conn.transaction():
                conn.execute(
                    "UPDATE lil_queue_items SET state = 'queued', claimed_by = NULL, "
                    "claimed_at = NULL WHERE state = 'claimed' AND claimed_by = %s",
                    [worker],
                )
                conn.execute("DELETE FROM lil_workers WHERE worker = %s", [worker])

        self._run(go)
        if self._waker is not None:
            self._waker.wanted.set()

    def hold(self, spec: QueueSpec, item: QueueItem, *, declare: bool = False) -> None:
        check_spec(spec)
        args = item.args or (None, None)

        def go(conn: Any) -> None:
            with conn.transaction():
                _declare(conn, spec, replace=declare)
                conn.execute(
                    "INSERT INTO lil_queue_items AS i (run_id, queue, workflow, run_key, priority, "
                    "state, enqueued, claimed_by, claimed_at, claims, entry, args_codec, args) "
                    f"VALUES (%s, %s, %s, %s, %s, 'held', {_NOW}, %s, {_NOW}, 1, %s, %s, %s) "
                    "ON CONFLICT (run_id) DO UPDATE SET state = 'held', queue = excluded.queue, "
                    "claimed_by = excluded.claimed_by, claimed_at = excluded.claimed_at, "
                    "claims = i.claims + 1, finished = NULL, outcome = NULL, entry = "
                    "excluded.entry, args_codec = excluded.args_codec, args = excluded.args, "
                    "enqueued = CASE WHEN i.state = 'finished' THEN excluded.enqueued ELSE "
                    "i.enqueued END",
                    [item.run_id, spec.name, item.workflow, item.key, item.priority, self.session]
                    + [item.entry, args[0], args[1]],
                )

        self._run(go)

    def unhold(self, run_id: str, outcome: str) -> None:
        self.finish_item(self.session, run_id, outcome)

    def pause_queue(self, name: str, paused: bool) -> None:
        def go(conn: Any) -> int:
            return int(
                conn.execute(
                    "UPDATE lil_queues SET paused = %s WHERE name = %s", [paused, name]
                ).rowcount
            )

        if not self._run(go):
            raise JournalError(
                f"no queue {name!r} in this journal",
                fix="`lil queue list` shows the queues (a queue exists once something was "
                "enqueued on it)",
            )

    def queues(self) -> list[QueueInfo]:
        def go(conn: Any) -> list[QueueInfo]:
            rows = conn.execute(
                "SELECT q.name, q.concurrency, q.per_worker, q.limit_n, q.period, q.priority, "
                "q.paused, count(*) FILTER (WHERE i.state = 'queued'), "
                "count(*) FILTER (WHERE i.state = 'claimed'), "
                "count(*) FILTER (WHERE i.state = 'finished'), "
                "min(i.enqueued) FILTER (WHERE i.state = 'queued'), "
                "count(*) FILTER (WHERE i.state = 'held') "
                "FROM lil_queues q LEFT JOIN lil_queue_items i ON i.queue = q.name "
                "GROUP BY q.name ORDER BY q.name"
            ).fetchall()
            return [QueueInfo(QueueSpec(*r[:6]), *r[6:]) for r in rows]

        return list(self._run(go))

    def queue_items(
        self, *, queue: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[QueueItem]:
        def go(conn: Any) -> list[QueueItem]:
            return items_of(
                conn.execute(
                    f"SELECT {_ITEM_COLS} FROM lil_queue_items i WHERE (%s::text IS NULL OR "
                    "i.queue = %s) AND (%s::text IS NULL OR i.state = %s) ORDER BY "
                    "CASE i.state WHEN 'claimed' THEN 0 WHEN 'held' THEN 1 WHEN 'queued' THEN 2 "
                    "ELSE 3 END, "
                    "i.enqueued LIMIT %s",
                    [queue, queue, state, state, max(0, min(limit, 10_000))],
                ).fetchall()
            )

        return list(self._run(go))

    def queue_item(self, run_id: str) -> QueueItem | None:
        def go(conn: Any) -> list[QueueItem]:
            return items_of(
                conn.execute(
                    f"SELECT {_ITEM_COLS} FROM lil_queue_items i WHERE i.run_id = %s", [run_id]
                ).fetchall()
            )

        found = self._run(go)
        return found[0] if found else None

    def workers(self) -> list[WorkerInfo]:
        def go(conn: Any) -> list[WorkerInfo]:
            rows = conn.execute(
                "SELECT w.worker, w.host, w.pid, w.queues, w.concurrency, w.started, w.beat, "
                f"w.ttl, CASE WHEN w.beat < {_NOW} - w.ttl THEN 'lapsed' ELSE w.state END, "
                "coalesce(array_agg(i.run_id ORDER BY i.run_id) FILTER (WHERE i.run_id IS NOT "
                "NULL), '{}') FROM lil_workers w LEFT JOIN lil_queue_items i ON "
                "i.claimed_by = w.worker AND i.state = 'claimed' GROUP BY w.worker "
                "ORDER BY w.started"
            ).fetchall()
            return [WorkerInfo._make([*r[:3], tuple(r[3]), *r[4:9], tuple(r[9])]) for r in rows]

        return list(self._run(go))

    def wait_for_work(self, timeout: float) -> None:
        """LISTEN on the queue channel (one connection of this process, kept open)."""
        try:
            if self._listener is None or self._listener.closed:
                self._listener = self._fresh()
                self._listener.execute(f'LISTEN "{self._channel}"')
            for _ in self._listener.notifies(timeout=max(0.0, timeout), stop_after=1):
                break
        except Exception:  # the server is away: the next claim reconnects and says so
            self._listener = None

    def close_queues(self) -> None:
        if self._waker is not None:
            self._waker.close()
        if self._listener is not None:
            try:
                self._listener.close()
            except Exception:
                pass


def _declare(conn: Any, spec: QueueSpec, replace: bool = True) -> None:
    """Create the queue; with ``replace``, its limits become the spec's (the latest wins)."""
    if not replace:
        conn.execute(
            "INSERT INTO lil_queues (name, concurrency, per_worker, limit_n, period, priority) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO NOTHING",
            list(spec),
        )
        return
    conn.execute(
        "INSERT INTO lil_queues (name, concurrency, per_worker, limit_n, period, priority) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
        "concurrency = excluded.concurrency, per_worker = excluded.per_worker, "
        "limit_n = excluded.limit_n, period = excluded.period, priority = excluded.priority "
        "WHERE (lil_queues.concurrency, lil_queues.per_worker, lil_queues.limit_n, "
        "lil_queues.period, lil_queues.priority) IS DISTINCT FROM (excluded.concurrency, "
        "excluded.per_worker, excluded.limit_n, excluded.period, excluded.priority)",
        list(spec),
    )


def _beat(conn: Any, w: WorkerInfo) -> float:
    """Upsert the worker's row with the server's clock; return that time."""
    row = conn.execute(
        "INSERT INTO lil_workers (worker, host, pid, queues, concurrency, started, beat, ttl, "
        f"state) VALUES (%s, %s, %s, %s, %s, {_NOW}, {_NOW}, %s, %s) ON CONFLICT (worker) DO "
        "UPDATE SET beat = excluded.beat, ttl = excluded.ttl, state = excluded.state, "
        "concurrency = excluded.concurrency, queues = excluded.queues RETURNING beat",
        [w.worker, w.host, w.pid, list(w.queues), w.concurrency, bounded_ttl(w.ttl)]
        + ["draining" if w.state == "draining" else "running"],
    ).fetchone()
    return float(row[0])


def _claim(conn: Any, worker: WorkerInfo, n: int, now: float) -> list[QueueItem]:
    names = list(worker.queues) or None
    specs = conn.execute(
        "SELECT name, concurrency, per_worker, limit_n, period, priority, paused FROM lil_queues "
        "WHERE (%s::text[] IS NULL OR name = ANY(%s)) AND NOT paused ORDER BY name",
        [names, names],
    ).fetchall()
    limited = [s[0] for s in specs if s[1] is not None or s[2] is not None or s[3] is not None]
    if limited:  # the last free slot goes to one claim: these queues' claims take turns
        conn.execute(
            "SELECT 1 FROM lil_queues WHERE name = ANY(%s) ORDER BY name FOR UPDATE", [limited]
        )
    counts = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT i.queue, count(*), count(*) FILTER (WHERE i.claimed_by = %s) FROM "
            "lil_queue_items i JOIN lil_workers w ON w.worker = i.claimed_by WHERE "
            f"i.state = 'claimed' AND i.queue = ANY(%s) AND {_LIVE.format(now='%s')} "
            "GROUP BY i.queue",
            [worker.worker, limited, now],
        ).fetchall()
    } if limited else {}  # fmt: skip
    taken: list[QueueItem] = []
    for name, conc, per, limit_n, period, prio, _paused in specs:
        room = n - len(taken)
        if room <= 0:
            break
        live, mine = counts.get(name, (0, 0))
        if conc is not None:
            room = min(room, conc - live)
        if per is not None:
            room = min(room, per - mine)
        if limit_n is not None:
            started = conn.execute(
                "SELECT count(*) FROM lil_queue_items WHERE queue = %s AND claimed_at > %s",
                [name, now - period],
            ).fetchone()[0]
            room = min(room, limit_n - int(started))
        if room <= 0:
            continue
        order = "i.priority, " if prio else ""
        rows = conn.execute(
            f"WITH picked AS (SELECT i.run_id FROM lil_queue_items i LEFT JOIN lil_workers w ON "
            f"w.worker = i.claimed_by WHERE i.queue = %s AND i.state <> 'finished' AND "
            f"i.state <> 'held' AND "
            f"(i.state = 'queued' OR w.worker IS NULL OR NOT ({_LIVE.format(now='%s')})) "
            f"ORDER BY {order}i.enqueued, i.run_id LIMIT %s FOR UPDATE OF i SKIP LOCKED) "
            "UPDATE lil_queue_items i SET state = 'claimed', claimed_by = %s, claimed_at = %s, "
            f"claims = i.claims + 1 FROM picked WHERE i.run_id = picked.run_id RETURNING "
            f"{_ITEM_COLS}",
            [name, now, room, worker.worker, now],
        ).fetchall()
        taken += items_of(rows)
    return taken
