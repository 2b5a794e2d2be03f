"""The journal owner: the one process that opens a journal's DuckDB file, serving every client.

Started on demand by the first client (detached, in its own session: ``python -S -m
letitloop.journal.duckdb.owner``, see ``__main__``), it replays its log into DuckDB and serves
clients on a Unix socket until it has been idle for ``LIL_OWNER_IDLE`` seconds (default 300).

Threads: the *event loop* (this module) owns the sockets, the live state (``journal._state``)
and the log; a write is acknowledged after its batch is fdatasync'ed to the log (group commit).
The *database thread* (``_dbthread``) is the only user of DuckDB: it folds acknowledged records
into the tables and answers every query after folding what was acknowledged before it
(read-your-writes). Nothing half-done survives a crash: the log holds every acknowledged record
until it is folded.

The event loop: one round reads every ready request, commits the round's records in
one synced write, then sends the replies; back-pressure and dropped clients are handled here."""

from __future__ import annotations

import json
import os
import selectors
import sys
import threading
import time

from letitloop.errors import DiskFullError, JournalError, LetItLoopError
from letitloop.journal._config import JournalPaths
from letitloop.journal._records import Record
from letitloop.journal.duckdb import _files, _wire
from letitloop.journal.duckdb.owner import _warm
from letitloop.journal.duckdb.owner._base import (
    _TICK,
    HOLD_DELAY,
    MAX_BUFFERED,
    MAX_FOLD_LAG,
    PARTIAL_SECONDS,
    RECV_BYTES,
    SOCKET_CHECK,
    WARM_QUIET,
)
from letitloop.journal.duckdb.owner._commit import Commit
from letitloop.journal.duckdb.owner._conn import SENT, Conn, error_reply, reply_to
from letitloop.journal.duckdb.owner._dbthread import DbThread
from letitloop.journal.duckdb.owner._dispatch import Dispatch
from letitloop.journal.duckdb.owner._listener import Listening
from letitloop.journal.duckdb.owner._log import Log
from letitloop.journal.duckdb.owner._queue import QueueOps
from letitloop.journal.duckdb.owner._requests import BadRequest, decode as decode_request
from letitloop.journal.duckdb.owner._shutdown import Shutdown
from letitloop.journal.duckdb.owner._start import Starting

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any


class Owner(Listening, Dispatch, QueueOps, Commit, DbThread, Starting, Shutdown):
    """The journal owner: started (cold or warm) when made, then ``serve`` runs the event loop
    until the owner is stopped or idle; the rounds of the loop are here, every other job in the
    part that names it."""

    def __init__(self, paths: JournalPaths, idle: float) -> None:
        super().__init__(paths, idle)
        t0 = time.perf_counter()
        warm, why = _warm.take(paths)
        self.log = Log(paths.log_dir)
        if warm is not None:
            why = self._warm_start(warm)
        self.stats["warm"] = why or f"{len(self.state.runs)} runs"
        if not self.db_ready and why:
            self._cold_start()
        self.stats["recovery_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
        self.identity = _files.identity(paths)
        self.file_ids = {}
        for path in (paths.root, paths.lock, paths.db, paths.log_dir):
            try:
                st = os.stat(path)
                self.file_ids[path] = (st.st_dev, st.st_ino)
            except FileNotFoundError:
                self.file_ids[path] = None

    def serve(self, ready_fd: int = -1) -> None:
        self.sel = selectors.DefaultSelector()
        self.listener = self._listen()
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.db_thread = threading.Thread(target=self._db_thread, name="lil-db", daemon=True)
        self.db_thread.start()
        self._write_pid_file()
        # the signal module's own C half: signal.py converts its constants to enums at import,
        # a cost every cold start would pay before its first answer
        if TYPE_CHECKING:
            import signal as _signal
        else:
            import _signal

        _signal.signal(_signal.SIGTERM, self._on_term)
        _signal.signal(_signal.SIGINT, self._on_term)
        print(f"READY {json.dumps(self.stats)}", flush=True)
        if ready_fd >= 0:  # wake the client that started us
            os.write(ready_fd, b"R")
            os.close(ready_fd)
        while not self.stopping:
            self._round()
        self._shutdown()

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
            if self.buffered:
                self._expire_partials(now)
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
            elif item[0] == "qloaded":
                self._queue_loaded(item[1], batch, replies)
            elif item[0] == "lgreset":
                self.lg_heads.reset()
            elif item[0] == "evict":
                for run_id in item[1]:
                    self.known.discard(run_id)
                    entry = self.state.runs.get(run_id)
                    if entry is not None and entry.holder is None:
                        del self.state.runs[run_id]
        self._expire_waiters(replies)
        self._queue_tick()
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
            if self.buffered + len(data) > MAX_BUFFERED:
                self._refuse_partial(conn)
                return
            conn.buf += data
            self.buffered += len(data)
            if len(conn.buf) >= 4:
                (n,) = _wire.LEN.unpack_from(conn.buf)
                if n <= _wire.MAX_REQUEST and len(conn.buf) < 4 + n:
                    return
            self.buffered -= len(conn.buf)
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
                conn.send(error_reply(exc))
                self._drop(conn)
                return
            if end - off < 4 + n:
                break
            body = memoryview(data)[off + 4 : off + 4 + n]
            off += 4 + n
            if conn.refused is not None:  # another user: told why at its first request
                self._send(conn, error_reply(JournalError(conn.refused, fix=_files.SHARE_FIX)))
                self._drop(conn)
                return
            req: dict[str, Any] = {}
            before = len(batch)
            try:
                req = decode_request(body)
                self._handle(conn, req, batch, replies)
            except LetItLoopError as exc:
                if req.get("ack", True):
                    replies.append((conn, reply_to(req, error_reply(exc))))
            except Exception as exc:  # a bug met by one request: that client is told, all go on
                import traceback  # (a bug's report: not imported before one)

                traceback.print_exc()
                replies.append((conn, reply_to(req, error_reply(exc))))
            if len(batch) > before:
                self.writers.add(conn)
        if off < end and conn.alive:
            if self.buffered + end - off > MAX_BUFFERED:
                self._refuse_partial(conn)
                return
            conn.buf = bytearray(memoryview(data)[off:])
            self.buffered += end - off
            conn.partial_since = self.last_request

    def _refuse_partial(self, conn: Conn, late: bool = False) -> None:
        """Drop a client whose unfinished request would pass the owner's bound on what all its
        clients may leave unfinished (``MAX_BUFFERED``), or that left one for longer than
        ``PARTIAL_SECONDS``; it is told why (a resent request is safe: records have keys)."""
        if late:
            why = f"a request left unfinished for more than {PARTIAL_SECONDS:g} s was dropped"
        else:
            why = (
                f"the journal owner holds {self.buffered >> 20} MB of unfinished requests from "
                f"its clients, its limit (LIL_OWNER_MAX_BUFFERED = {MAX_BUFFERED >> 20} MB); "
                "this connection was refused"
            )
        fix = "send the request again (whole); large data belongs outside the journal"
        conn.send(error_reply(JournalError(why, fix=fix)))
        self._drop(conn)

    def _expire_partials(self, now: float) -> None:
        """Drop the clients whose unfinished request waited too long (see _refuse_partial)."""
        for conn in [c for c in self.conns.values() if c.buf]:
            if now - conn.partial_since > PARTIAL_SECONDS:
                self._refuse_partial(conn, late=True)

    def _drop(self, conn: Conn) -> None:
        if conn.sock not in self.conns:
            return
        self.buffered -= len(conn.buf)
        conn.buf = bytearray()
        self.sel.unregister(conn.sock)
        with conn.lock:
            conn.alive = False
            conn.sock.close()
        del self.conns[conn.sock]
        if conn.session is not None:
            self.sessions[conn.session] -= 1
            if self.sessions[conn.session] == 0:
                del self.sessions[conn.session]
                self._queue_session_gone(conn.session)
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
        error = error_reply(exc)
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
