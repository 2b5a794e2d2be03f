"""The owner's shared state, its tuning, and the jobs its parts ask of each other.

The owner (``_loop.Owner``) is one object made of parts, one module per job: starting
(``_start``), the socket (``_listener``), request dispatch (``_dispatch``), group commit
(``_commit``), the database thread (``_dbthread``) and a clean stop (``_shutdown``). Each part is
a class over ``OwnerBase``, which holds the state they share, so the hot path pays no
indirection; a part that needs another's job calls it through the stubs below.
"""

from __future__ import annotations

import queue
import selectors
import socket
import threading
import time
from collections import deque
from pathlib import Path

from letitloop.journal._config import JournalPaths, env_float
from letitloop.journal._records import Record
from letitloop.journal._state import JournalState
from letitloop.journal.duckdb import _files, _wire
from letitloop.journal.duckdb.owner._checkpoint_heads import Heads
from letitloop.journal.duckdb.owner._conn import Conn

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

    from letitloop.journal._limits import Buckets
    from letitloop.journal.duckdb.owner._log import Log
    from letitloop.journal.duckdb.owner._notify import Notifier
    from letitloop.journal.duckdb.owner._queries import Queries
    from letitloop.journal.duckdb.owner._store import Store

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
SOCKET_CHECK = 1.0  # seconds between checks that the socket file is still ours
# unfinished requests all clients together may leave buffered (one whole request always fits),
# and how long one may stay unfinished: a client is refused beyond either
MAX_BUFFERED = int(env_float("LIL_OWNER_MAX_BUFFERED", 2 * _wire.MAX_REQUEST))
PARTIAL_SECONDS = env_float("LIL_OWNER_PARTIAL_SECONDS", 60.0)
_NOTIFYING = frozenset({"step", "err", "fail", "suspend"})  # kinds the notifier may act on
_TICK = ("tick",)  # a database-thread job: FOLD_BATCH records wait (it folds unless it is)


class OwnerBase:
    """What every part of the owner reads and changes (the event loop's, unless said)."""

    store: Store  # set once DuckDB is open (at once, or by the database thread: see _warm)
    notifier: Notifier
    log: Log
    known: set[str]  # every run DuckDB has (or the snapshot had), loaded or not
    journal_id: str  # a warm start's, until DuckDB is open
    schema_version: int
    warm_lsn: int
    sel: selectors.BaseSelector
    listener: socket.socket
    db_thread: threading.Thread
    _warm_runs: list[dict[str, Any]] | None
    identity: list[int]  # the journal on disk, told in the hello (see _files.identity)
    file_ids: dict[Path, tuple[int, int] | None]  # its files as they were when this owner began

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
        self.buffered = 0  # bytes of unfinished requests in every connection's ``buf``
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
        self._buckets: Buckets | None = None  # shared rate limits (made by the first ``limit``)
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        # connections whose output waits or that died while the database thread sent to them
        self.dirty: deque[Conn] = deque()
        self.writers: set[Conn] = set()  # connections whose requests added to this round's batch
        self.accept_paused_until = 0.0  # accept() hit EMFILE: listening again at this time
        self.accept_backoff = 0.0
        self.socket_checked = 0.0
        self.socket_id: tuple[int, int] | None = None

    @property
    def buckets(self) -> Buckets:
        """The shared rate limits: in memory, they refill whatever happens (event loop only)."""
        if self._buckets is None:
            from letitloop.journal._limits import Buckets

            self._buckets = Buckets()
        return self._buckets

    # -- jobs of other parts ------------------------------------------------------------------

    def _send(self, conn: Conn, msg: Any) -> None:
        raise NotImplementedError  # _loop

    def _redo(self, conn: Conn, req: dict[str, Any], batch: Any, replies: Any) -> None:
        raise NotImplementedError  # _dispatch

    def _wake_waiters(self, run_id: str) -> None:
        raise NotImplementedError  # _dispatch

    def _queue_request(self, conn: Conn, req: dict[str, Any], replies: list[Any]) -> None:
        raise NotImplementedError  # _queue

    def _queue_db_job(self, job: tuple[Any, ...]) -> None:
        raise NotImplementedError  # _queue

    def _needs_db(self, conn: Conn, op: Any, req: dict[str, Any]) -> bool:
        raise NotImplementedError  # _start

    def _open_db(self) -> None:
        raise NotImplementedError  # _start

    def _commit(self, batch: list[tuple[Record, bool]]) -> None:
        raise NotImplementedError  # _commit
