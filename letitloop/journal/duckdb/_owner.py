"""The journal owner: the one process that opens a journal's DuckDB file, serving every client.

Started on demand by the first client (detached, in its own session), it wins an exclusive
``flock`` on ``<journal>.lock`` (a loser waits briefly in case the holder is shutting down, then
exits), replays its log into DuckDB, and serves clients on a Unix socket until it has been idle
for ``LIL_OWNER_IDLE`` seconds (default 300).

Threads: the *event loop* (this module) owns the sockets, the live state (``journal._state``)
and the log; a write is acknowledged after its batch is fdatasync'ed to the log (group commit).
The *database thread* is the only user of DuckDB: it folds acknowledged records into the tables
and answers every query after folding what was acknowledged before it (read-your-writes).
Nothing half-done survives a crash: the log holds every acknowledged record until it is folded.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import queue
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack

from letitloop._version import __version__ as VERSION
from letitloop.errors import DiskFullError, JournalError, LetItLoopError, RunLockedError
from letitloop.journal._config import JournalPaths, env_float, make_journal_dir
from letitloop.journal._records import Record, budget_record, without_payload
from letitloop.journal._state import (
    _WIRE_FIELDS,
    JournalState,
    RunEntry,
    rearm_record,
    reset_record,
    resolve_record,
)
from letitloop.journal.duckdb import _files, _warm, _wire
from letitloop.journal.duckdb._checkpoint_heads import Heads
from letitloop.journal.duckdb._log import Log, disk_full, frame_parts
from letitloop.journal.duckdb._queries import Queries
from letitloop.journal.duckdb._reads import QUERIES, READS
from letitloop.journal.duckdb._requests import BadRequest, decode as decode_request

if TYPE_CHECKING:
    from letitloop.journal.duckdb._notify import Notifier
    from letitloop.journal.duckdb._store import Store

# how long acknowledged records may wait for the database thread (every read folds first):
# a fold costs ~40 ms of DuckDB statements whatever its size (and ~40 us a record), so records
# are folded in batches: once FOLD_DELAY passed (looked at every second, and at every read), or
# as soon as FOLD_BATCH wait (a bounded fold lag)
FOLD_DELAY = env_float("LIL_OWNER_FOLD_DELAY", 0.2)
FOLD_BATCH = 2000
# back-pressure: while this many acknowledged records wait for the database thread, the event
# loop reads no requests, so a burst of writers cannot leave a read waiting for an unbounded fold
MAX_FOLD_LAG = int(env_float("LIL_OWNER_MAX_FOLD_LAG", 4 * FOLD_BATCH))
_FOLD_NOW = min(FOLD_BATCH, MAX_FOLD_LAG)  # this many waiting records are folded at once
RECV_BYTES = 1 << 18  # one recv takes a 100 KB step output whole
# runs kept in memory; older idle ones are reloaded from DuckDB when touched again
MAX_LOADED_RUNS = int(env_float("LIL_OWNER_MAX_RUNS", 2000))
HOLD_DELAY = 0.05  # records nobody waits for are written within this, or with the next ack
# a warm start (see _warm) opens DuckDB once no request came for WARM_QUIET seconds (importing
# it holds the interpreter's lock for ~100 ms, which would stall the first replies), once a
# request needs it, or after WARM_MAX seconds at the latest
WARM_QUIET = env_float("LIL_OWNER_WARM_QUIET", 0.1)
WARM_MAX = env_float("LIL_OWNER_WARM_MAX", 2.0)
SNAPSHOT_SECONDS = 1.0  # what a clean stop may spend reading the snapshot's runs from DuckDB


# bytes a client may leave unread (replies, pushes) before it is dropped; one message of any
# size is always queued whole, so this bounds a client that stops reading, not a large reply
MAX_UNREAD = int(env_float("LIL_OWNER_MAX_UNREAD", 4 << 20))
SOCKET_CHECK = 1.0  # seconds between checks that the socket file is still ours
SENT, PENDING, DEAD = 0, 1, 2  # what Conn.send did
_NOTIFYING = frozenset({"step", "err", "fail", "suspend"})  # kinds the notifier may act on
_TICK = ("tick",)  # a database-thread job: FOLD_BATCH records wait (it folds unless it is)


class Conn:
    """One client connection: its socket (non-blocking), receive buffer, unsent output, session.

    ``send`` never blocks: the socket takes what it can, the rest waits in ``out`` for the event
    loop to flush when the socket is writable. A client whose unread output passes
    ``MAX_UNREAD`` (a suspended ``lil-tui``, a client that never reads) is dropped instead of
    stalling the owner; a subscriber re-reads what it missed when it reconnects.
    """

    def __init__(self, sock: socket.socket, refused: str | None = None) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.out = bytearray()
        self.session: str | None = None
        self.subscribed = False
        self.sub_run: str | None = None
        self.lock = threading.Lock()
        self.alive = True
        self.refused = refused  # why this peer may not use the journal (told at its first request)
        self.writing = False  # registered with the selector for EVENT_WRITE

    def send(self, msg: Any) -> int:
        """Queue ``msg``; SENT if all of it left now, PENDING if some waits, DEAD if dropped."""
        data = _wire.pack(msg)
        with self.lock:
            if not self.alive:
                return DEAD
            if self.out:
                if len(self.out) + len(data) > MAX_UNREAD:
                    self.alive = False  # stopped reading: the event loop drops it
                    return DEAD
                self.out += data
                return PENDING
            try:
                k = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                k = 0
            except OSError:
                self.alive = False
                return DEAD
            if k == len(data):
                return SENT
            self.out += memoryview(data)[k:]
            return PENDING

    def flush(self) -> bool:
        """Write queued output the socket takes now; True once nothing is left (or it died)."""
        with self.lock:
            if not self.alive:
                return True
            try:
                k = self.sock.send(self.out)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                self.alive = False
                return True
            del self.out[:k]
            return not self.out


def _re(req: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """Tag a reply with its request's id, so a client can never take one reply for another."""
    if "id" in req:
        reply["re"] = req["id"]
    return reply


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, LetItLoopError):
        return {"ok": False, "error": exc.to_dict()}
    return {
        "ok": False,
        "error": {"type": "JournalError", "message": f"{type(exc).__name__}: {exc}"},
    }


class Owner:
    store: Store  # set once DuckDB is open (at once, or by the database thread: see _warm)
    notifier: Notifier

    def __init__(self, paths: JournalPaths, idle: float) -> None:
        self.paths = paths
        self.idle = idle
        self.started = time.time()
        self.share_gid = _files.share_gid(paths)
        self.state = JournalState()
        self.stats: dict[str, Any] = {"acked": 0, "fsyncs": 0, "torn_tails_cut": 0}
        self.jobs: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        # acknowledged records waiting for the database thread, which folds them when the
        # oldest has waited FOLD_DELAY, when FOLD_BATCH wait, and before every read
        # (read-your-writes); appending wakes it only when FOLD_BATCH are waiting
        self.to_fold: deque[tuple[int, Record]] = deque()
        self.unfolded_since = 0.0  # when to_fold last went from empty to not
        self.folded = threading.Event()  # set by the database thread after each fold
        self.inbox: deque[tuple[Any, ...]] = deque()
        self.lg_heads = Heads()  # each graph thread's newest checkpoint, answered from memory
        self.loading: dict[str, list[tuple[Conn, dict[str, Any]]]] = {}
        self.waiters: dict[str, list[tuple[float, Conn, dict[str, Any]]]] = {}
        self.conns: dict[socket.socket, Conn] = {}
        self.sessions: dict[str, int] = {}
        self.stopping = False
        self.last_active = time.monotonic()
        # accepted records nobody waits for (a step's start), already applied to the live state:
        # written with the next acknowledged batch, or after HOLD_DELAY, saving a write per step
        self.held: list[Record] = []
        self.held_since = 0.0
        # a warm start serves the snapshot's runs at once; what needs DuckDB waits for it
        self.db_ready = False
        self.load_now = threading.Event()  # the database thread may open DuckDB now
        self.last_request = time.monotonic()
        self.deferred: list[tuple[Conn, dict[str, Any]]] = []
        self.deferring: set[Conn] = set()  # connections with a deferred request: all of theirs wait
        self.kick_pending = False
        self.queries: Queries | None = None  # lil journal sql's thread, started on first use
        t0 = time.perf_counter()
        warm, why = _warm.take(paths)
        self.log = Log(paths.log_dir)
        if warm is not None:
            why = self._warm_start(warm)
        self.stats["warm"] = why or f"{len(self.state.runs)} runs"
        if not self.db_ready and why:
            self._cold_start()
        self.stats["recovery_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
        from letitloop.journal._limits import Buckets

        self.buckets = Buckets()  # shared rate limits: in memory, they refill whatever happens
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        # connections whose output waits or that died while the database thread sent to them
        self.dirty: deque[Conn] = deque()
        self.writers: set[Conn] = set()  # connections whose requests added to this round's batch
        self.accept_paused_until = 0.0  # accept() hit EMFILE: listening again at this time
        self.accept_backoff = 0.0
        self.socket_checked = 0.0
        self.socket_id: tuple[int, int] | None = None

    # -- starting and stopping ----------------------------------------------------------------

    def _cold_start(self) -> None:
        """Open DuckDB, fold what the log holds after its watermark, then serve (the usual)."""
        from letitloop.journal.duckdb import _notify
        from letitloop.journal.duckdb._store import Store  # duckdb: only once this owner won

        self.store = Store(self.paths.db)
        _files.protect_existing(self.paths, self.share_gid)
        items, torn = self.log.recover(self.store.folded_lsn)
        self.stats["torn_tails_cut"] = torn
        recs = self.store.decode(items)  # a record that cannot be read is quarantined
        self.store.fold(recs)  # recovery folds the unfolded suffix before serving
        self.log.drop_folded(self.store.folded_lsn)
        self.known = self.store.known_runs()
        self.stats["replayed"] = len(recs)
        self.notifier = _notify.start(self.store, self.paths.db)  # before serving: see _notify
        self.db_ready = True
        self.load_now.set()

    def _warm_start(self, warm: _warm.Warm) -> str:
        """Serve from a verified snapshot if the log holds nothing after it; "" if it does,
        else why not (the caller then starts cold). DuckDB is opened by the database thread."""
        scan = self.log.scan(warm.folded_lsn)
        if scan.records or scan.damage or scan.torn is not None or scan.end != warm.folded_lsn:
            return "stale: the log holds records written after it"
        try:
            runs = {data["run"]: _entry_from(data) for data in warm.runs}
        except (KeyError, TypeError, ValueError, IndexError):
            return "unreadable runs"
        _items, torn = self.log.recover(warm.folded_lsn)  # nothing to replay: opens for appends
        self.stats["torn_tails_cut"] = torn
        self.stats["replayed"] = 0
        _files.protect_existing(self.paths, self.share_gid)
        self.state.runs.update(runs)
        self.known = set(runs)  # every run DuckDB has joins when it is open
        self.journal_id, self.schema_version, self.warm_lsn = (
            warm.journal_id,
            warm.schema,
            warm.folded_lsn,
        )
        return ""

    def _open_db(self) -> None:
        """Database thread, warm start: open DuckDB when the event loop allows (see WARM_QUIET),
        then hand the event loop the runs DuckDB knows and the requests that waited for it."""
        self.load_now.wait(WARM_MAX)
        t0 = time.perf_counter()
        from letitloop.journal.duckdb import _notify
        from letitloop.journal.duckdb._store import Store

        try:
            store = Store(self.paths.db)
        except LetItLoopError as exc:  # said plainly, as main() does: clients show this log
            print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr, flush=True)
            os._exit(2)
        if store.journal_id != self.journal_id or store.folded_lsn != self.warm_lsn:
            print(
                f"error: the journal {self.paths.db} is not the one its warm-start snapshot "
                f"described (journal {store.journal_id} folded to {store.folded_lsn}, snapshot "
                f"{self.journal_id} at {self.warm_lsn}); every acknowledged record is in its log\n"
                "  fix: run the workflow again: the next owner starts from DuckDB and its log",
                file=sys.stderr,
                flush=True,
            )
            os._exit(70)
        known = store.known_runs()
        self.store = store
        self.notifier = _notify.start(store, self.paths.db)  # before any fold: see _notify
        ms = round((time.perf_counter() - t0) * 1e3, 1)
        print(f"DUCKDB open in {ms} ms, {time.time() - self.started:.3f} s after start", flush=True)
        self.inbox.append(("ready", known))
        self.wake_w.send(b"x")

    def _db_ready(self, known: set[str], batch: Any, replies: Any) -> None:
        """Event loop: DuckDB is open; handle, in order, the requests that waited for it."""
        self.known |= known
        self.db_ready = True
        if self.kick_pending:
            self.notifier.kick()
        waited, self.deferred = self.deferred, []
        self.deferring.clear()
        for conn, req in waited:
            self._redo(conn, req, batch, replies)

    def _needs_db(self, conn: Conn, op: Any, req: dict[str, Any]) -> bool:
        """Before DuckDB is open: whether a request must wait for it (a run the snapshot does not
        hold may be in DuckDB; a connection's requests are handled in order)."""
        if op in READS or op in QUERIES:
            self.load_now.set()  # reads wait in the database thread's queue
        if conn in self.deferring or op in ("notices", "notice_retry"):
            return True
        runs = self.state.runs
        if op == "append":
            return any(rec.get("run") and rec["run"] not in runs for rec in req["recs"])
        if op == "relock":
            return any(rid not in runs for rid in req["runs"])
        run_id = req.get("run")
        return bool(run_id) and op not in READS and op != "output" and run_id not in runs

    def _snapshot(self) -> None:
        """At a clean stop, everything folded, DuckDB still open: the unfinished runs in memory,
        most recently updated first, as DuckDB has them (written once DuckDB is closed)."""
        if self.store.folded_lsn != self.log.end:
            self._warm_runs: list[dict[str, Any]] | None = None
            return
        unfinished = sorted(
            (e for e in self.state.runs.values() if e.status != "completed"),
            key=lambda e: e.updated,
            reverse=True,
        )
        runs = []
        until = time.monotonic() + SNAPSHOT_SECONDS
        for entry in unfinished[: _warm.MAX_RUNS]:
            data = self.store.load_run(entry.run_id)
            if data is not None:
                runs.append(data)
            if time.monotonic() > until:  # a stop must not wait long for it
                break
        self._warm_runs = runs

    # -- serving ------------------------------------------------------------------------------

    def serve(self, ready_fd: int = -1) -> None:
        self.sel = selectors.DefaultSelector()
        self.listener = self._listen()
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.db_thread = threading.Thread(target=self._db_thread, name="lil-db", daemon=True)
        self.db_thread.start()
        self._write_pid_file()
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        print(f"READY {json.dumps(self.stats)}", flush=True)
        if ready_fd >= 0:  # wake the client that started us
            os.write(ready_fd, b"R")
            os.close(ready_fd)
        while not self.stopping:
            self._round()
        self._shutdown()

    def _listen(self) -> socket.socket:
        """Bind the journal's socket (replacing any file at its path: we hold the lock)."""
        sock_path = self.paths.socket
        sock_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            sock_path.unlink()  # a dead owner's socket, or one a cleaner replaced
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(sock_path))
        _files.protect(sock_path, self.share_gid)
        listener.listen(256)
        listener.setblocking(False)
        st = os.stat(sock_path)
        self.socket_id = (st.st_dev, st.st_ino)
        self.socket_checked = time.monotonic()
        self.sel.register(listener, selectors.EVENT_READ)
        return listener

    def _write_pid_file(self) -> None:
        info = {"pid": os.getpid(), "version": VERSION, "protocol": _wire.PROTOCOL}
        _files.write_private(
            self.paths.pid_file, json.dumps(info | {"socket": str(self.paths.socket)})
        )

    def _check_socket(self) -> None:
        """If the socket file was deleted or replaced (a cleaned temporary directory), bind it
        again, so new clients find this owner instead of starting one that cannot win the lock."""
        self.socket_checked = time.monotonic()
        try:
            st = os.stat(self.paths.socket)
            if (st.st_dev, st.st_ino) == self.socket_id:
                return
        except OSError:
            pass
        print("the socket file was removed or replaced; listening on a new one", flush=True)
        old = self.listener
        if self.accept_paused_until == 0.0:
            self.sel.unregister(old)
        old.close()
        self.accept_paused_until = 0.0
        self.listener = self._listen()
        if not self.paths.pid_file.exists():
            self._write_pid_file()

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                raise
            # out of file descriptors: stop accepting for a while, keep serving the others
            self.accept_backoff = min(1.0, max(0.05, self.accept_backoff * 2))
            self.accept_paused_until = time.monotonic() + self.accept_backoff
            self.sel.unregister(self.listener)
            print(f"accept(): {exc.strerror}; pausing {self.accept_backoff:.2f} s", flush=True)
            return
        self.accept_backoff = 0.0
        client.setblocking(False)
        self.conns[client] = Conn(client, refused=_files.refusal(client, self.share_gid))
        self.sel.register(client, selectors.EVENT_READ)

    def _send(self, conn: Conn, msg: Any) -> None:
        """Send from either thread; the event loop handles what could not go out at once."""
        if conn.send(msg) != SENT:
            self.dirty.append(conn)
            if threading.current_thread() is self.db_thread:
                self.wake_w.send(b"x")

    def _tend(self) -> None:
        """Event loop: drop connections that died or stopped reading; watch for writability."""
        while self.dirty:
            conn = self.dirty.popleft()
            if conn.sock not in self.conns or conn.sock.fileno() < 0:
                continue
            if not conn.alive:
                self._drop(conn)
            elif conn.out and not conn.writing:
                conn.writing = True
                self.sel.modify(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE)

    def _disk_full(self, exc: DiskFullError, replies: list[tuple[Conn, Any]]) -> None:
        """The log could not take this round's writes: tell their writers (nothing of them was
        kept), then exit without folding, since the live state holds what the log does not.
        The next owner rebuilds it from the log, once there is space."""
        error = _error(exc)
        for conn, msg in replies:
            if conn in self.writers and msg.get("ok"):
                msg = {**error, **({"re": msg["re"]} if "re" in msg else {})}
            conn.send(msg)
        for conn in list(self.conns.values()):
            conn.flush()
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr, flush=True)
        os._exit(75)

    def _on_term(self, signum: int, frame: Any) -> None:
        """SIGTERM/SIGINT: finish the current round, fold everything, close DuckDB, exit."""
        self.stopping = True
        self.wake_w.send(b"x")

    def _round(self) -> None:
        batch: list[tuple[Record, bool]] = []
        replies: list[tuple[Conn, Any]] = []
        self.writers = set()
        if len(self.to_fold) >= MAX_FOLD_LAG:
            self._fold_lag()
        for key, events in self.sel.select(timeout=self._timeout()):
            sock = key.fileobj
            if sock is self.listener:
                self._accept()
            elif sock is self.wake_r:
                try:
                    self.wake_r.recv(4096)
                except BlockingIOError:
                    pass
            elif sock in self.conns:  # (an earlier event of this round may have dropped it)
                conn = self.conns[sock]
                if events & selectors.EVENT_WRITE and conn.flush():
                    conn.writing = False
                    self.sel.modify(conn.sock, selectors.EVENT_READ)
                    self.dirty.append(conn)
                if events & selectors.EVENT_READ and conn.sock in self.conns:
                    self._read(conn, batch, replies)
        now = time.monotonic()
        if self.accept_paused_until and now >= self.accept_paused_until:
            self.accept_paused_until = 0.0
            self.sel.register(self.listener, selectors.EVENT_READ)
        if now - self.socket_checked > SOCKET_CHECK:
            self._check_socket()
        if not self.load_now.is_set() and now - self.last_request >= WARM_QUIET:
            self.load_now.set()
        while self.inbox:
            item = self.inbox.popleft()
            if item[0] == "loaded":
                self._loaded(item[1], item[2], batch, replies)
            elif item[0] == "ready":
                self._db_ready(item[1], batch, replies)
            elif item[0] == "retry":
                for _, conn, req in item[1]:
                    self._redo(conn, req, batch, replies)
            elif item[0] == "lghead":  # the database thread read a thread's newest checkpoint
                self.lg_heads.seed(*item[1:])
            elif item[0] == "lgpairs":
                self.lg_heads.learn_pairs(item[1], item[2])
            elif item[0] == "lgreset":
                self.lg_heads.reset()
            elif item[0] == "evict":
                for run_id in item[1]:
                    self.known.discard(run_id)
                    entry = self.state.runs.get(run_id)
                    if entry is not None and entry.holder is None:
                        del self.state.runs[run_id]
        self._expire_waiters(replies)
        if batch or self.held:
            try:
                self._commit(batch)
            except DiskFullError as exc:
                self._disk_full(exc, replies)
        for conn, msg in replies:
            self._send(conn, msg)
        self._tend()
        if self.conns:
            self.last_active = time.monotonic()
        elif time.monotonic() - self.last_active > self.idle and not self.loading:
            # a notification's retries keep it up another idle period
            if self.db_ready and self.notifier.busy:
                self.last_active = time.monotonic()
            else:
                self.stopping = True

    def _fold_lag(self) -> None:
        """Back-pressure: wait (reading no request) until the database thread took the records
        that wait for it, so the lag of DuckDB behind the log stays bounded whatever the load."""
        t0 = time.monotonic()
        self.load_now.set()  # a warm start opens DuckDB now: these records need it
        while len(self.to_fold) >= MAX_FOLD_LAG and not self.stopping:
            self.folded.clear()
            self.jobs.put(_TICK)
            self.folded.wait(0.05)
            if not self.db_thread.is_alive():
                return
        self.stats["lag_waits"] = self.stats.get("lag_waits", 0) + 1
        self.stats["lag_wait_ms"] = round(
            self.stats.get("lag_wait_ms", 0.0) + (time.monotonic() - t0) * 1e3, 1
        )

    def _timeout(self) -> float:
        deadlines = [d for ws in self.waiters.values() for d, _, _ in ws]
        if self.held:
            deadlines.append(self.held_since + HOLD_DELAY)
        if self.accept_paused_until:
            deadlines.append(self.accept_paused_until)
        deadlines.append(self.socket_checked + SOCKET_CHECK)
        if not self.load_now.is_set():
            deadlines.append(self.last_request + WARM_QUIET)
        idle_at = self.last_active + self.idle - time.monotonic()
        return max(0.0, min([idle_at, *[d - time.monotonic() for d in deadlines]]) + 0.001)

    def _read(self, conn: Conn, batch: list[Any], replies: list[Any]) -> None:
        """Handle every whole request that arrived; requests are decoded where the socket put
        them (a step's output is not copied), only a partial one waits in ``conn.buf``."""
        try:
            data = conn.sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        self.last_request = time.monotonic()
        if conn.buf:  # the rest of a request: joined once it is whole
            conn.buf += data
            if len(conn.buf) >= 4:
                (n,) = _wire.LEN.unpack_from(conn.buf)
                if n <= _wire.MAX_REQUEST and len(conn.buf) < 4 + n:
                    return
            data, conn.buf = bytes(conn.buf), bytearray()
        off, end = 0, len(data)
        while end - off >= 4 and conn.alive:
            (n,) = _wire.LEN.unpack_from(data, off)
            if n > _wire.MAX_REQUEST:  # refused before buffering it; the stream cannot resync
                exc = BadRequest(
                    f"a request of {n} bytes exceeds the journal's limit of "
                    f"{_wire.MAX_REQUEST} bytes",
                    fix="keep large data outside the journal and return a reference to it",
                )
                conn.send(_error(exc))
                self._drop(conn)
                return
            if end - off < 4 + n:
                break
            body = memoryview(data)[off + 4 : off + 4 + n]
            off += 4 + n
            if conn.refused is not None:  # another user: told why at its first request
                self._send(conn, _error(JournalError(conn.refused, fix=_files.SHARE_FIX)))
                self._drop(conn)
                return
            req: dict[str, Any] = {}
            before = len(batch)
            try:
                req = decode_request(body)
                self._handle(conn, req, batch, replies)
            except LetItLoopError as exc:
                if req.get("ack", True):
                    replies.append((conn, _re(req, _error(exc))))
            except Exception as exc:  # a bug met by one request: that client is told, all go on
                traceback.print_exc()
                replies.append((conn, _re(req, _error(exc))))
            if len(batch) > before:
                self.writers.add(conn)
        if off < end and conn.alive:
            conn.buf = bytearray(memoryview(data)[off:])

    def _drop(self, conn: Conn) -> None:
        if conn.sock not in self.conns:
            return
        self.sel.unregister(conn.sock)
        with conn.lock:
            conn.alive = False
            conn.sock.close()
        del self.conns[conn.sock]
        if conn.session is not None:
            self.sessions[conn.session] -= 1
            if self.sessions[conn.session] == 0:
                del self.sessions[conn.session]
                gone = []
                for run_id in self.state.release_session(conn.session):
                    self._wake_waiters(run_id)
                    entry = self.state.runs.get(run_id)
                    if entry is not None and entry.status == "running":
                        gone.append(entry)
                if gone:  # the process died executing them: say so, they are interrupted now
                    by = conn.session.split("/", 1)[0]
                    now = time.time()
                    self._push(
                        [
                            (e.last_lsn, {"k": "interrupted", "run": e.run_id, "by": by, "ts": now})
                            for e in gone
                        ],
                    )

    # -- requests -----------------------------------------------------------------------------

    def _handle(
        self, conn: Conn, req: dict[str, Any], batch: list[Any], replies: list[Any]
    ) -> None:
        op = req.get("op")
        if op == "hello":
            if conn.session is None:
                conn.session = str(req["session"])
                self.sessions[conn.session] = self.sessions.get(conn.session, 0) + 1
            replies.append((conn, _re(req, self._hello())))
            return
        if conn.session is None:
            raise JournalError("the first request on a connection must be hello")
        if not self.db_ready and self._needs_db(conn, op, req):
            self.deferred.append((conn, req))
            self.deferring.add(conn)
            self.load_now.set()
            return
        run_id: str = req.get("run") or ""
        unloaded = run_id and run_id not in self.state.runs and run_id in self.known
        if (
            op in ("open_run", "resolve", "rearm", "budget", "reset", "relock", "release", "append")
            and unloaded
        ):  # an append names its run only when it comes from outside the run (an answer)
            self._park_load(run_id, conn, req)
            return
        if op == "open_run":
            self._open_run(conn, req, batch, replies)
        elif op == "append":
            # an import (``lil journal copy``) writes history: no lease, refused for a held run
            session = None if req.get("import") else conn.session
            for rec in req["recs"]:  # each record is a fact of its own: earlier ones stand
                if self.state.check(rec, session):
                    self.state.apply(rec)
                    if rec["run"]:
                        self.known.add(rec["run"])
                    batch.append((rec, req.get("ack", True)))
            if req.get("ack", True):
                replies.append((conn, _re(req, {"ok": True})))
        elif op == "release":  # the client does not wait for this one
            self.state.release(run_id, conn.session, req.get("inv"))
            self._wake_waiters(run_id)
        elif op == "relock":
            for rid in req["runs"]:
                if rid not in self.state.runs and rid in self.known:
                    self._park_load(rid, conn, req)
                    return
            self.state.relock(req["runs"], conn.session, req.get("invs"))
            replies.append((conn, _re(req, {"ok": True})))
        elif op in ("resolve", "rearm", "budget", "reset"):
            entry = self._entry(run_id)
            if op == "budget":
                rec = budget_record(run_id, entry.epoch, req["usd"], req["tokens"], req["by"])
            elif op == "resolve":
                rec = resolve_record(entry, req["marker"], req["res"], req["by"], req.get("note"))
            elif op == "rearm":
                rec = rearm_record(entry, req.get("step"), req["by"])
            else:
                rec = reset_record(entry, req["by"], req.get("note"))
            if self.state.check(rec, conn.session):
                self.state.apply(rec)
                batch.append((rec, True))
            replies.append((conn, _re(req, {"ok": True})))
        elif op == "output" and self._inline_output(conn, req, replies):
            return
        elif op in ("limit", "capacity", "notices", "notice_retry"):
            self._limits_and_notices(conn, req, replies)
        elif op == "subscribe":
            conn.subscribed, conn.sub_run = True, req.get("run")
            replies.append((conn, _re(req, {"ok": True})))
        elif op == "stop":
            self.stopping = True
            replies.append((conn, _re(req, {"ok": True, "pid": os.getpid()})))
        elif op == "checkpoints" and (rows := self.lg_heads.answer(req)) is not None:
            replies.append((conn, _re(req, {"ok": True, "rows": rows})))
        elif op in READS or op in QUERIES:
            held = [r for r, e in self.state.runs.items() if e.holder is not None]
            self.jobs.put(("read", conn, req, held))
        else:
            raise JournalError(f"unknown journal operation {op!r}")

    def _limits_and_notices(self, conn: Conn, req: dict[str, Any], replies: list[Any]) -> None:
        """Rate limits are answered here, from memory; the outbox on the notifier's thread."""
        op, now = req["op"], time.monotonic()
        if op == "limit":
            act = req["act"]
            if act == "take":
                wait = self.buckets.take(
                    req["name"], req.get("rpm"), req.get("tpm"), req.get("tokens", 0), now
                )
                replies.append((conn, _re(req, {"ok": True, "wait": wait})))
                return
            if act == "adjust":
                self.buckets.adjust(req["name"], req.get("tokens", 0), now)
            elif act == "block":
                self.buckets.block(req["name"], req.get("seconds", 0.0), now)
            else:
                raise BadRequest(f"request 'limit': unknown act {act!r}"[:200])
            if req.get("ack", True):
                replies.append((conn, _re(req, {"ok": True})))
        elif op == "capacity":
            replies.append((conn, _re(req, {"ok": True, "buckets": self.buckets.snapshot(now)})))
        else:
            n = self.notifier

            def work() -> Any:
                if op == "notices":
                    return [list(x) for x in n.notices(req.get("state"), req.get("limit", 100))]
                return n.retry(req["key"])

            n.ask(work, lambda reply: self._send_from_notifier(conn, _re(req, reply)))

    def _send_from_notifier(self, conn: Conn, msg: dict[str, Any]) -> None:
        if not msg["ok"]:
            msg["error"] = {"type": "JournalError", "message": msg["error"]}
        self._send(conn, msg)
        self.wake_w.send(b"x")  # what could not go out at once waits for the event loop

    def _hello(self) -> dict[str, Any]:
        return {
            "ok": True,
            "protocol": _wire.PROTOCOL,
            "schema": self.schema_version if not self.db_ready else self.store.schema_version,
            "journal_id": self.journal_id if not self.db_ready else self.store.journal_id,
            "pid": os.getpid(),
            "version": VERSION,
            "features": ["head"],  # open_run with head=True: the run's header, not its steps
        }

    def _entry(self, run_id: str) -> RunEntry:
        entry = self.state.runs.get(run_id)
        if entry is None:
            raise JournalError(f"no run {run_id!r} in this journal", run_id=run_id)
        return entry

    def _open_run(
        self, conn: Conn, req: dict[str, Any], batch: list[Any], replies: list[Any]
    ) -> None:
        assert conn.session is not None
        try:
            wire, recs = self.state.begin(req, conn.session)
        except RunLockedError:
            wait = float(req.get("lock_timeout") or 0)
            if wait <= 0:
                raise
            deadline = req.setdefault("_deadline", time.monotonic() + wait)
            self.waiters.setdefault(req["run"], []).append((deadline, conn, req))
            return
        if wire is None:
            raise JournalError(f"no run {req['run']!r} in this journal", run_id=req["run"])
        self.known.add(req["run"])
        batch.extend((rec, True) for rec in recs)
        replies.append((conn, _re(req, {"ok": True, "state": wire})))

    def _inline_output(self, conn: Conn, req: dict[str, Any], replies: list[Any]) -> bool:
        entry = self.state.runs.get(req["run"])
        step = entry.steps.get(req["pos"]) if entry and entry.epoch == req["epoch"] else None
        if step and step["att"] == req["att"] and step.get("out") is not None:
            replies.append((conn, _re(req, {"ok": True, "out": [step["codec"], step["out"]]})))
            return True
        return False

    def _park_load(self, run_id: str, conn: Conn, req: dict[str, Any]) -> None:
        if run_id not in self.loading:
            self.loading[run_id] = []
            self.jobs.put(("load", run_id))
        self.loading[run_id].append((conn, req))

    def _loaded(self, run_id: str, data: dict[str, Any] | None, batch: Any, replies: Any) -> None:
        parked = self.loading.pop(run_id, [])
        if data is not None and run_id not in self.state.runs:
            self.state.runs[run_id] = _entry_from(data)
        elif data is None:
            self.known.discard(run_id)
        for conn, req in parked:
            self._redo(conn, req, batch, replies)

    def _redo(self, conn: Conn, req: dict[str, Any], batch: Any, replies: Any) -> None:
        """Handle a request that waited (for a run to load, or for a lease)."""
        if conn.alive:
            self.writers.add(conn)  # (a retried open_run or a parked write)
            try:
                self._handle(conn, req, batch, replies)
            except LetItLoopError as exc:
                replies.append((conn, _re(req, _error(exc))))
            except Exception as exc:  # see _read
                traceback.print_exc()
                replies.append((conn, _re(req, _error(exc))))

    def _wake_waiters(self, run_id: str) -> None:
        waiting = self.waiters.pop(run_id, [])
        if waiting:  # retried in order; the first wins the lease, the others park again
            self.inbox.append(("retry", waiting))

    def _expire_waiters(self, replies: list[Any]) -> None:
        now = time.monotonic()
        for run_id in list(self.waiters):
            keep = []
            for deadline, conn, req in self.waiters[run_id]:
                if not conn.alive:
                    continue
                if deadline <= now:
                    exc = RunLockedError(
                        f"run {run_id} was still being executed by another process after "
                        f"waiting {req.get('lock_timeout')} s",
                        fix="wait longer (lock_timeout=) or stop the other process",
                        run_id=run_id,
                    )
                    replies.append((conn, _re(req, _error(exc))))
                else:
                    keep.append((deadline, conn, req))
            self.waiters[run_id] = keep
            if not keep:
                del self.waiters[run_id]

    # -- writes -------------------------------------------------------------------------------

    def _commit(self, batch: list[tuple[Record, bool]]) -> None:
        """Group commit: every record of a round (and those held) in one synced write."""
        now = time.monotonic()
        if not any(ack for _, ack in batch) and not self.stopping:
            if not self.held:
                self.held_since = now
            self.held.extend(rec for rec, _ in batch)
            if now - self.held_since < HOLD_DELAY and len(self.held) < 1000:
                return
        records = self.held + [rec for rec, _ in batch]
        self.held = []
        frames = [frame_parts(msgpack.packb(rec, use_bin_type=True)) for rec in records]
        lsn = self.log.append_frames(frames) - sum(len(h) + len(p) for h, p in frames)
        self.stats["acked"] += len(records)
        self.stats["fsyncs"] += 1
        items = []
        for rec, (head, payload) in zip(records, frames, strict=True):
            lsn += len(head) + len(payload)
            items.append((lsn, rec))
            entry = self.state.runs.get(rec["run"])
            if entry is not None:
                entry.last_lsn = lsn
        waiting = len(self.to_fold)
        if not waiting:
            self.unfolded_since = time.monotonic()
        self.to_fold.extend(items)  # queued before the acks go out: reads fold them first
        if waiting < _FOLD_NOW <= waiting + len(items):
            self.jobs.put(_TICK)  # the database thread folds now (bounded lag)
        self.lg_heads.apply(items)
        if any(rec["k"] in _NOTIFYING for rec in records):
            if not self.db_ready:
                self.kick_pending = True
            elif self.notifier.outbox is not None:
                self.notifier.kick()  # (nothing to scan without a configured outbox)
        if len(self.state.runs) > MAX_LOADED_RUNS and self.db_ready:
            self._evict()
        self._push(items)

    def _evict(self) -> None:
        """Forget the least recently updated runs that no process holds and that DuckDB has in
        full; touching one again loads it from there. Keeps the owner's memory bounded."""
        folded = self.store.folded_lsn
        idle = sorted(
            (e for e in self.state.runs.values() if e.holder is None and e.last_lsn <= folded),
            key=lambda e: e.updated,
        )
        for entry in idle[: len(self.state.runs) - MAX_LOADED_RUNS * 4 // 5]:
            del self.state.runs[entry.run_id]

    def _push(self, items: list[tuple[int, Record]]) -> None:
        subs = [c for c in self.conns.values() if c.subscribed]
        if not subs:
            return
        events = [{"seq": lsn, **without_payload(rec)} for lsn, rec in items]
        for conn in subs:
            mine = [e for e in events if conn.sub_run in (None, e["run"])]
            if mine:
                self._send(conn, {"push": mine})

    # -- the database thread ------------------------------------------------------------------

    def _db_thread(self) -> None:
        try:
            if not self.db_ready:
                self._open_db()
            while True:
                wait = 1.0
                if self.to_fold:
                    wait = max(0.0, self.unfolded_since + FOLD_DELAY - time.monotonic())
                    if len(self.to_fold) >= _FOLD_NOW:
                        wait = 0.0
                try:
                    job: tuple[Any, ...] | None = self.jobs.get(timeout=wait)
                except queue.Empty:
                    job = None
                if (job is not None and job is not _TICK) or self._fold_due():
                    self._fold()
                if job is None or job is _TICK:
                    continue
                if job[0] == "exit":
                    return
                self._db_job(job)
        except BaseException as exc:  # DuckDB failed: die, so a fresh owner replays the log
            full = disk_full(exc)
            if full is not None:  # said plainly: clients show the end of this log to people
                print(
                    f"error: no space left on the device holding the journal {self.paths.db} "
                    f"({full}); every acknowledged record is kept in its log\n"
                    f"  fix: free space on the disk of {self.paths.root} (`df -h "
                    f"{self.paths.root}`), then run the workflow again",
                    file=sys.stderr,
                    flush=True,
                )
                os._exit(75)
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(70)

    def _fold_due(self) -> bool:
        """Whether waiting records should be folded without a read asking for them."""
        if not self.to_fold:
            return False
        waited = time.monotonic() - self.unfolded_since
        return waited >= FOLD_DELAY or len(self.to_fold) >= _FOLD_NOW

    def _fold(self) -> None:
        items = []
        while self.to_fold:
            items.append(self.to_fold.popleft())
        if items:
            self.store.fold(items)
            self.log.drop_folded(self.store.folded_lsn)
            self.folded.set()

    def _db_job(self, job: tuple[Any, ...]) -> None:
        if job[0] == "load":
            data = self.store.load_run(job[1])
            self.inbox.append(("loaded", job[1], data))
            self.wake_w.send(b"x")
            return
        _, conn, req, held = job
        if req["op"] in QUERIES:  # up to 30 s: on the query thread, so folds go on meanwhile
            if self.queries is None:
                self.queries = Queries(self.store, self._answer_query)
            self.queries.ask(conn, req)
            return
        try:
            reply = {"ok": True, **READS[req["op"]](self, req, held)}
        except Exception as exc:  # a failed read must not stop folding
            reply = _error(exc)
        self._send(conn, _re(req, reply))

    def _answer_query(
        self, conn: Conn, req: dict[str, Any], answer: dict[str, Any] | Exception
    ) -> None:
        """The query thread's reply (what could not go out at once waits for the event loop)."""
        reply = _error(answer) if isinstance(answer, Exception) else {"ok": True, **answer}
        self._send(conn, _re(req, reply))
        self.wake_w.send(b"x")

    def _shutdown(self) -> None:
        if self.held:
            self._commit([])
        self.listener.close()
        try:
            self.paths.socket.unlink()
        except FileNotFoundError:
            pass
        self.load_now.set()  # a warm start that served without DuckDB folds it all now
        self.jobs.put(("exit",))
        self.db_thread.join()
        if self.queries is not None:
            self.queries.close()
        self._snapshot()
        self.notifier.close()
        self.store.close()
        self.log.seal(self.store.folded_lsn)  # all folded: the log need not keep a byte
        if self._warm_runs is not None:  # after close: it names the DuckDB file as closed
            try:
                _warm.write(
                    self.paths,
                    self.store.journal_id,
                    self.store.schema_version,
                    self.store.folded_lsn,
                    self._warm_runs,
                )
            except (OSError, LetItLoopError) as exc:  # the next owner starts cold: said here
                print(f"warm-start snapshot not written: {exc}", file=sys.stderr, flush=True)
        self.log.close()
        try:
            self.paths.pid_file.unlink()
        except FileNotFoundError:
            pass


def _entry_from(data: dict[str, Any]) -> RunEntry:
    entry = RunEntry(data["run"], data["wf"], data["key"], data["created"])
    entry.updated, entry.epoch, entry.status, entry.tries = (
        data["updated"],
        data["epoch"],
        data["status"],
        data["try"],
    )
    entry.args, entry.entry, entry.parent = data["args"], data["entry"], data["parent"]
    entry.result = (data["result"][0], data["result"][1]) if data["result"] else None
    entry.error = data["error"]
    entry.started_by = data["started_by"]
    entry.cost_micros, entry.tokens = data["cost"], data["tokens"]
    entry.budget = tuple(data["budget"]) if data["budget"] else None
    if entry.status == "running":  # this owner does not know whether its starter still runs it
        entry.orphan_of = entry.started_by
    entry.keys = set(data["keys"])
    for step in data["steps"]:
        step["wire"] = [step.get(f) for f in _WIRE_FIELDS]
        entry.steps[step["pos"]] = step
    return entry


def _take_lock(paths: JournalPaths, wait: float) -> int | None:
    """Win the election: an exclusive flock, waiting a little in case the holder is leaving."""
    make_journal_dir(paths.root)
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                os.close(fd)
                return None
            if _serving(paths):
                os.close(fd)
                return None
            time.sleep(0.02)


def _serving(paths: JournalPaths) -> bool:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(str(paths.socket))
        return True
    except OSError:
        return False
    finally:
        s.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m letitloop.journal.duckdb._owner")
    parser.add_argument("--journal", required=True, help="the journal's DuckDB file")
    parser.add_argument("--ready-fd", type=int, default=-1, help="written to once listening")
    args = parser.parse_args(argv)
    sys.setswitchinterval(0.0005)  # the loop must get the GIL back quickly from the db thread
    import gc

    gc.set_threshold(50_000, 20, 100)  # the live state is many small dicts: collect rarely
    paths = JournalPaths(Path(args.journal).resolve())
    try:
        _files.private_umask(_files.share_gid(paths))  # before any file is made
    except LetItLoopError as exc:
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr, flush=True)
        return 2
    lock_fd = _take_lock(paths, wait=10.0)
    if lock_fd is None:
        print("another owner serves this journal; exiting", flush=True)
        return 0
    try:
        owner = Owner(paths, env_float("LIL_OWNER_IDLE", 300.0))
    except LetItLoopError as exc:  # said plainly: clients show the end of this log to people
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr, flush=True)
        return 2
    except Exception as exc:
        full = disk_full(exc)
        if full is None:
            raise
        print(
            f"error: no space left on the device holding the journal {paths.db} ({full}); "
            f"every acknowledged record is kept in its log\n  fix: free space on the disk of "
            f"{paths.root} (`df -h {paths.root}`), then run the workflow again",
            file=sys.stderr,
            flush=True,
        )
        return 2
    owner.serve(ready_fd=args.ready_fd)
    os.close(lock_fd)  # released only after DuckDB is closed
    return 0


if __name__ == "__main__":
    sys.exit(main())
