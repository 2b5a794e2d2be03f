"""``OwnerJournal``: the Journal contract spoken to a journal's owner process over its socket.

Clients never import duckdb. The first call finds the owner's socket or starts the owner
(detached, in its own session) and waits until it answers. If the owner dies, every call
reconnects (starting a new owner if needed), re-takes the leases this process held, and resends
its request; records have natural keys, so a resent write is never applied twice.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from _thread import allocate_lock  # threading.Lock, without importing threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from letitloop import errors as _errors
from letitloop.errors import JournalUnavailableError, JournalVersionError, LetItLoopError
from letitloop.journal import _checkpoints
from letitloop.journal._config import JournalPaths, env_float, find_journal, make_journal_dir
from letitloop.journal._contract import (
    ApprovalInfo,
    AttemptInfo,
    CacheEntry,
    CheckpointRow,
    Encoded,
    EventInfo,
    Notice,
    Proposal,
    RunDetail,
    RunInfo,
    RunState,
)
from letitloop.journal._records import (
    Record,
    cache_record,
)
from letitloop.journal._state import run_state
from letitloop.journal._writes import RecordWrites
from letitloop.journal.duckdb import _wire

# How long a call waits for the owner's answer before raising (an owner that is SIGSTOPped,
# hung or swamped). A workflow's own writes and reads (open_run, append, output...) wait
# longer, so a briefly stopped owner costs a pause, not a failed run.
READ_TIMEOUT = env_float("LIL_READ_TIMEOUT", 15.0)
WRITE_TIMEOUT = env_float("LIL_WRITE_TIMEOUT", 120.0)
WORKFLOW_OPS = frozenset({"open_run", "append", "release", "relock", "output", "cache_get"})
START_KILLS = 5  # owners killed by a signal while starting that are replaced before giving up

_journals: dict[Path, OwnerJournal] = {}
_journals_lock = allocate_lock()
_forks = [0]  # how many times this process was forked into (a system call saved per request)
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))
_spawned: list[Any] = []  # subprocess.Popen objects of owners this process started


def open_journal(spec: str | os.PathLike[str] | None = None) -> OwnerJournal:
    """The process-wide journal object for a path (found as ``journal._config`` says if None)."""
    path = find_journal(spec)
    with _journals_lock:
        journal = _journals.get(path)
        if journal is None or journal.closed:
            journal = _journals[path] = OwnerJournal(path)
        return journal


def stop_owner(spec: str | os.PathLike[str] | None = None, timeout: float = 10.0) -> int | None:
    """Stop a journal's owner if one runs (it folds, checkpoints and exits); return its pid."""
    paths = JournalPaths(find_journal(spec))
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(str(paths.socket))
        link = _Link(sock)
        session = f"{os.getpid()}@{socket.gethostname()}/stop"
        link.call({"op": "hello", "session": session}, READ_TIMEOUT)
        pid = int(link.call({"op": "stop"}, READ_TIMEOUT)["pid"])
    except TimeoutError:
        pid = _pid_from(paths.pid_file)
        raise JournalUnavailableError(
            f"the journal owner (pid {pid}) for {paths.db} did not answer within "
            f"{READ_TIMEOUT:g} s: it is stopped (SIGSTOP, Ctrl-Z), hung, or overloaded",
            fix=f"resume it (`kill -CONT {pid}`) and stop it again, or end it (`kill {pid}`)",
        ) from None
    except OSError:
        return None
    finally:
        sock.close()
    with _journals_lock:
        journal = _journals.pop(paths.db, None)
    if journal is not None:
        journal.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap()
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        if not paths.pid_file.exists() and not paths.socket.exists():
            time.sleep(0.02)  # pid file goes last; give the process a moment to exit
            _reap()
            return pid
        time.sleep(0.01)
    return pid


def _owner_path() -> list[str]:
    """The owner's module path (it starts with ``-S``, without ``site``): this package's root,
    then this process's path as ``site`` and ``PYTHONPATH`` made it, less the script's own
    directory, so the owner imports the same letitloop, msgpack and duckdb as its client."""
    pkg_root = str(Path(__file__).resolve().parents[3])  # holds letitloop/
    out = [pkg_root]
    for entry in sys.path[0 if sys.flags.safe_path else 1 :]:
        if entry and entry not in out:
            out.append(entry)
    return out


def _raise(error: dict[str, Any]) -> None:
    cls = getattr(_errors, str(error.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, LetItLoopError)):
        cls = _errors.JournalError
    raise cls(
        str(error.get("message")),
        fix=error.get("fix"),
        run_id=error.get("run_id"),
        step=error.get("step"),
        position=error.get("position"),
    )


def _pid_from(pid_file: Path) -> int:
    """The pid an owner wrote to its pid file, or 0."""
    import json

    try:
        return int(json.loads(pid_file.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _reap() -> None:
    """Collect owners this process started that have exited, so none stays a zombie."""
    for proc in list(_spawned):
        if proc.poll() is not None:
            _spawned.remove(proc)


class _Link:
    """One socket to the owner, one request in flight.

    The socket stays in blocking mode with its wait bounded by the kernel (``SO_RCVTIMEO`` and
    ``SO_SNDTIMEO``), changed only when a call's limit differs by more than a few percent: a
    Python timeout would cost a ``poll`` before every send and receive and an ``ioctl`` per
    change, three to six system calls per step. A call times out at its limit or up to 5 %
    after it, never before.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.count = 0
        self.bound = 0.0  # the kernel's wait bound, in seconds (0: none)
        sock.settimeout(None)

    def _bound(self, left: float | None) -> None:
        """Make each blocking send or receive give up after ``left`` s (or up to 5 % later)."""
        if left is None:
            if self.bound:
                self._set_bound(0.0)
            return
        if not left <= self.bound <= 1.05 * left:
            self._set_bound(max(0.001, 1.02 * left))

    def _set_bound(self, seconds: float) -> None:
        whole = int(seconds)
        value = struct.pack("ll", whole, int((seconds - whole) * 1e6))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
        self.bound = seconds

    def call(self, req: dict[str, Any], timeout: float | None = None) -> Any:
        """The reply to ``req``; ``TimeoutError`` if it takes longer than ``timeout`` s."""
        self.count += 1
        req["id"] = self.count
        data = _wire.pack(req)
        self._check_size(req, data)
        deadline = None if timeout is None else time.monotonic() + timeout
        self._bound(timeout)
        try:
            self.sock.sendall(data)
        except BlockingIOError:  # the bound passed: the owner took nothing for that long
            raise TimeoutError(f"no room to send {req.get('op')!r} within {timeout} s") from None
        while True:
            try:
                msg = _wire.recv(self.sock)
            except BlockingIOError:  # (the link is closed then: a reply may be half read)
                raise TimeoutError(f"no reply to {req.get('op')!r} in {timeout} s") from None
            if msg.get("re", self.count) == self.count:
                return msg  # (an owner older than request ids does not tag replies)
            if deadline is not None:
                self._bound(max(0.001, deadline - time.monotonic()))

    def send(self, req: dict[str, Any], timeout: float | None = None) -> None:
        data = _wire.pack(req)
        self._check_size(req, data)
        self._bound(timeout)
        try:
            self.sock.sendall(data)
        except BlockingIOError:
            raise TimeoutError(f"no room to send {req.get('op')!r} within {timeout} s") from None

    def unbounded(self) -> socket.socket:
        """The socket, waiting as long as it takes (a subscription's pushes come when they come)."""
        self._bound(None)
        return self.sock

    @staticmethod
    def _check_size(req: dict[str, Any], data: bytes) -> None:
        if len(data) - 4 > _wire.MAX_REQUEST:
            raise _errors.JournalError(
                f"a {req.get('op')!r} request of {len(data) - 4} bytes exceeds the journal's "
                f"limit of {_wire.MAX_REQUEST} bytes (a step's output is sent in one request)",
                fix="keep large data outside the journal (a file, object storage) and return "
                "its path or URL from the step",
            )

    def close(self) -> None:
        self.sock.close()


class _Sub:
    """A pushed-event subscription on its own connection and thread."""

    def __init__(self, journal: OwnerJournal, callback: Any, run_id: str | None) -> None:
        self.journal, self.callback, self.run_id = journal, callback, run_id
        self.closed = False
        self.link: _Link | None = None
        import threading  # only a subscription runs a thread

        self.thread = threading.Thread(target=self._loop, name="lil-subscription", daemon=True)
        self.ready = threading.Event()
        self.thread.start()
        self.ready.wait(30)

    def _loop(self) -> None:
        pause = 0.05
        while not self.closed:
            try:
                self.link = self.journal._connect()
                self.link.call({"op": "subscribe", "run": self.run_id}, READ_TIMEOUT)
                self.link.unbounded()  # pushes come when they come
                if self.ready.is_set():
                    self.callback([])  # resubscribed after an owner restart: re-read, may miss
                self.ready.set()
                pause = 0.05
                stream = _wire.Stream(self.link.sock)
                while not self.closed:
                    msg = stream.recv()
                    if "push" in msg:
                        self.callback([_event(e) for e in msg["push"]])
            except (OSError, LetItLoopError):
                if self.closed or self.journal.closed:
                    return  # a closed journal ends its subscriptions
                time.sleep(pause)
                pause = min(1.0, pause * 2)  # no owner can start: try again, less and less often

    def close(self) -> None:
        self.closed = True
        if self.link is not None:
            try:
                self.link.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.link.close()


def _event(e: dict[str, Any]) -> EventInfo:
    return EventInfo(
        seq=e["seq"],
        run_id=e["run"],
        kind=e.get("k") or e.get("kind", ""),
        position=e.get("pos"),
        attempt=e.get("att"),
        name=e.get("name"),
        ts=e["ts"],
        data=e.get("data") or {k: v for k, v in e.items() if k != "seq"},
    )


class OwnerJournal(RecordWrites):
    """See the module docstring. Thread-safe: each concurrent call uses its own connection."""

    def __init__(self, path: Path) -> None:
        self.paths = JournalPaths(path)
        self.location = str(path)
        self.closed = False
        self._pool: list[_Link] = []
        self._lock = allocate_lock()
        self._leases: dict[str, str] = {}  # run -> the invocation (one call) holding it
        self._pid = os.getpid()
        self._forks = _forks[0]
        self._new_session()
        self.connect_timeout = env_float("LIL_CONNECT_TIMEOUT", 30.0)
        self.read_timeout = env_float("LIL_READ_TIMEOUT", READ_TIMEOUT)
        self.write_timeout = env_float("LIL_WRITE_TIMEOUT", WRITE_TIMEOUT)
        self._start_kills = 0
        self.journal_id = ""
        self.owner_pid = 0
        self.owner_features: frozenset[str] = frozenset()
        self._ready_fd = -1
        self._log_from = 0
        link = self._connect()
        self._pool.append(link)

    def _new_session(self) -> None:
        self.session = f"{os.getpid()}@{socket.gethostname()}/{os.urandom(6).hex()}"

    # -- connections --------------------------------------------------------------------------

    def _connect(self, answer_by: float | None = None) -> _Link:
        """Connect and say hello, starting the owner if nobody answers.

        An owner that accepts the connection but does not answer its hello by ``answer_by``
        (monotonic; default: the read timeout from now) is stopped or hung: that raises at
        once, naming its pid, since starting another owner cannot help while it holds the lock.
        """
        deadline = time.monotonic() + self.connect_timeout
        if answer_by is None:
            answer_by = time.monotonic() + self.read_timeout
        spawned_at = -1.0
        delay = 0.001
        while True:
            sock = socket.socket(socket.AF_UNIX)
            try:
                sock.connect(str(self.paths.socket))
                link = _Link(sock)
                hello = link.call(
                    {"op": "hello", "session": self.session},
                    max(0.001, answer_by - time.monotonic()),
                )
                self._check_hello(hello)
                self._start_kills = 0
                return link
            except TimeoutError:
                sock.close()
                raise self._no_answer("hello", answer_by) from None
            except PermissionError as exc:
                sock.close()
                raise JournalUnavailableError(
                    f"this user may not use the journal {self.location}: connecting to its "
                    f"owner's socket {self.paths.socket} failed ({exc.strerror})",
                    fix="run as the journal's user, or have it shared with your group "
                    '([tool.letitloop] share_with_group = "GROUP", see docs/security.md)',
                ) from None
            except (FileNotFoundError, ConnectionRefusedError, ConnectionResetError, EOFError):
                sock.close()
            except OSError:
                sock.close()
            now = time.monotonic()
            if now > deadline:
                raise JournalUnavailableError(
                    f"the journal owner for {self.location} did not answer within "
                    f"{self.connect_timeout:.0f} s{self._owner_log_tail()}",
                    fix="run `lil journal doctor` to see why; check that the directory is on a "
                    "local disk and writable",
                )
            if spawned_at < 0 or (now - spawned_at > 2.0 and not self._spawn_alive()):
                self._spawn()
                spawned_at = now
            if self._ready_fd >= 0:  # our owner says when it listens (or closes it when it exits)
                import select

                if select.select([self._ready_fd], [], [], 0.5)[0]:
                    ready = os.read(self._ready_fd, 1) == b"R"
                    os.close(self._ready_fd)
                    self._ready_fd = -1
                    if not ready and self._check_spawned_owner():  # killed while starting
                        spawned_at = -1.0
                continue
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def _check_hello(self, hello: dict[str, Any]) -> None:
        if not hello.get("ok"):
            _raise(hello["error"])
        if hello["protocol"] != _wire.PROTOCOL:
            raise JournalVersionError(
                f"the journal owner (pid {hello.get('pid')}, letitloop {hello.get('version')}) "
                f"speaks protocol {hello['protocol']}, this process speaks {_wire.PROTOCOL}",
                fix="run `lil journal stop` once no run is executing; the next call starts an "
                "owner of this version",
            )
        self.journal_id = hello["journal_id"]
        self.owner_pid = hello["pid"]
        # what this owner accepts beyond its protocol's core (an older owner lists nothing)
        self.owner_features = frozenset(f for f in hello.get("features") or () if type(f) is str)

    def _check_spawned_owner(self) -> bool:
        """The owner we started exited before listening: True if it should be started again
        (a signal killed it, up to ``START_KILLS`` times); raise, with its log, if it failed."""
        proc = _spawned[-1] if _spawned else None
        if proc is None:
            return False
        try:
            proc.wait(timeout=5)
        except Exception:  # still running: the connect loop will see what it does
            return False
        if proc.returncode < 0 and self._start_kills < START_KILLS:
            self._start_kills += 1  # killed from outside (OOM killer, a kill -9): not its fault
            return True
        if proc.returncode != 0:
            raise JournalUnavailableError(
                f"the journal owner for {self.location} exited with status {proc.returncode}"
                f"{self._owner_log_tail()}",
                fix="read the owner's log above; `lil journal doctor` checks the usual causes",
            )
        return False

    def _no_answer(self, op: object, deadline: float, limit: float | None = None) -> Exception:
        """The error for an owner that took the connection but did not answer in time."""
        pid = self.owner_pid or _pid_from(self.paths.pid_file)
        who = f"the journal owner (pid {pid})" if pid else "the journal owner"
        waited = f" within {limit:g} s" if limit is not None else ""
        return JournalUnavailableError(
            f"{who} for {self.location} did not answer {op!r}{waited}: it is stopped "
            "(SIGSTOP, Ctrl-Z), hung, or overloaded",
            fix=(
                f"resume it (`kill -CONT {pid}`) or end it (`kill {pid}`; the next call starts "
                "a new owner)"
                if pid
                else "run `lil journal doctor`"
            )
            + "; the limits are LIL_READ_TIMEOUT and, for a workflow's writes, "
            "LIL_WRITE_TIMEOUT (seconds)",
        )

    def _spawn_alive(self) -> bool:
        _reap()
        return bool(_spawned)

    def _spawn(self) -> None:
        import subprocess

        _reap()
        make_journal_dir(self.paths.root)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(_owner_path())
        if self._ready_fd >= 0:
            os.close(self._ready_fd)
        self._ready_fd, ready_w = os.pipe()
        log_fd = os.open(self.paths.owner_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with open(log_fd, "ab") as log:
            self._log_from = log.seek(0, os.SEEK_END)  # show people only what this owner wrote
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-S",  # no site: its .pth files cost more than the owner's own imports
                    "-m",
                    "letitloop.journal.duckdb._owner",
                    "--journal",
                    self.location,
                ]
                + ["--ready-fd", str(ready_w)],
                pass_fds=(ready_w,),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=True,
                env=env,
                cwd=str(self.paths.root),
            )
        os.close(ready_w)
        _spawned.append(proc)

    def _owner_log_tail(self) -> str:
        try:
            with open(self.paths.owner_log, "rb") as f:
                f.seek(self._log_from)
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        tail = text.strip().splitlines()[-8:]
        return ("; the owner's log ends:\n    " + "\n    ".join(tail)) if tail else ""

    def _take(self, answer_by: float | None = None) -> _Link:
        if _forks[0] != self._forks:  # forked: the parent's sockets and leases are not ours
            self._forks, self._pid = _forks[0], os.getpid()
            self._pool, self._leases = [], {}
            self._new_session()
        with self._lock:
            if self._pool:
                return self._pool.pop()
        return self._connect(answer_by)

    def _give(self, link: _Link) -> None:
        with self._lock:
            self._pool.append(link)

    def _call(self, req: dict[str, Any], reply: bool = True) -> Any:
        """Send a request, reconnecting and resending if the owner went away meanwhile; raise
        ``JournalUnavailableError`` if no answer comes within the op's limit (see above)."""
        if self.closed:
            raise _errors.JournalError(f"journal {self.location} was closed")
        op = req.get("op")
        limit = self.write_timeout if op in WORKFLOW_OPS else self.read_timeout
        limit += float(req.get("lock_timeout") or 0)  # the owner itself waits that long
        deadline = time.monotonic() + limit
        link = self._take(deadline)
        failures = 0
        while True:
            try:
                left = max(0.001, deadline - time.monotonic())
                if not reply:
                    link.send(req, left)
                    self._give(link)
                    return None
                msg = link.call(req, left)
                break
            except TimeoutError:
                link.close()
                raise self._no_answer(op, deadline, limit) from None
            except OSError:
                link.close()
                failures += 1
                if failures > 5:  # each new owner died on this request: something is wrong
                    raise JournalUnavailableError(
                        f"the journal owner for {self.location} stopped {failures} times while "
                        f"serving {req.get('op')!r}{self._owner_log_tail()}",
                        fix="read the owner's log above; `lil journal doctor` checks the usual "
                        "causes",
                    ) from None
                link = self._reconnect(deadline)
        self._give(link)
        if not msg.get("ok"):
            _raise(msg["error"])
        return msg

    def _reconnect(self, deadline: float) -> _Link:
        """A new connection after the owner died, with this process's leases taken again."""
        with self._lock:
            for old in self._pool:
                old.close()
            self._pool.clear()
        while True:  # the new owner may die too, even while we take our leases back
            link = self._connect(deadline)
            if not self._leases:
                return link
            try:
                left = max(0.001, deadline - time.monotonic())
                relock = {"op": "relock", "runs": sorted(self._leases), "invs": dict(self._leases)}
                msg = link.call(relock, left)
            except TimeoutError:
                link.close()
                raise self._no_answer("relock", deadline) from None
            except OSError:
                link.close()
                continue
            if not msg.get("ok"):
                link.close()
                _raise(msg["error"])
            return link

    # -- the contract -------------------------------------------------------------------------

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
    ) -> RunState:
        req = {"op": "open_run", "run": run_id, "wf": workflow, "key": key, "lease": lease}
        req.update(args=list(args) if args else None, entry=entry, parent=parent)
        req["lock_timeout"] = lock_timeout
        if reopen:
            req["reopen"] = True
        if not steps and "head" in self.owner_features:  # an older owner sends the steps
            req["head"] = True
        req["inv"] = invocation = os.urandom(6).hex()  # this call, not the whole process
        state = run_state(self._call(req)["state"])
        if lease and state.status != "completed":
            self._leases[run_id] = invocation
        return state

    def release_run(self, run_id: str) -> None:
        invocation = self._leases.pop(run_id, None)
        self._call({"op": "release", "run": run_id, "inv": invocation}, reply=False)

    def append(self, records: Sequence[Record], *, sync: bool = True) -> None:
        self._call({"op": "append", "recs": list(records), "ack": sync}, reply=sync)

    def _append_to_run(self, run_id: str, records: list[Record]) -> None:
        self._call({"op": "append", "recs": records, "run": run_id})  # loads an evicted run

    def import_records(self, records: Sequence[Record]) -> None:
        """Write copied history (``lil journal copy``): no lease; each request names its run, so
        the owner loads a run it evicted meanwhile."""
        from letitloop.journal._copy import history_groups

        for run_id, group in history_groups(records):
            self._call({"op": "append", "recs": group, "run": run_id, "import": True})

    def get_output(self, run_id: str, epoch: int, position: int, attempt: int) -> Encoded:
        req = {"op": "output", "run": run_id, "epoch": epoch, "pos": position, "att": attempt}
        codec, data = self._call(req)["out"]
        return codec, data

    def list_runs(
        self, *, status: str | None = None, workflow: str | None = None, limit: int = 100
    ) -> list[RunInfo]:
        req = {"op": "runs", "status": status, "workflow": workflow, "limit": limit}
        return [_run_info(r) for r in self._call(req)["runs"]]

    def find_run(self, text: str) -> str:
        from letitloop.journal._memory import match_run

        return match_run(text, self._call({"op": "run_ids"})["runs"])

    def results(self, run_ids: Sequence[str]) -> dict[str, Encoded]:
        from letitloop.journal.duckdb._reads import RESULTS_PER_REQUEST

        ids, out = list(run_ids), {}
        for i in range(0, len(ids), RESULTS_PER_REQUEST):
            msg = self._call({"op": "results", "runs": ids[i : i + RESULTS_PER_REQUEST]})
            out.update({r[0]: (r[1], r[2]) for r in msg["results"]})
        return out

    def get_run(self, run_id: str) -> RunDetail:
        msg = self._call({"op": "run", "run": run_id})
        result = msg.get("result")
        args = msg.get("args")
        return RunDetail(
            _run_info(msg["run"]),
            [_attempt(a) for a in msg["attempts"]],
            (result[0], result[1]) if result else None,
            msg.get("entry"),
            (args[0], args[1]) if args else None,
            result[2] if result and len(result) > 2 else None,
        )

    def events(
        self, *, after: int = 0, run_id: str | None = None, limit: int = 1000
    ) -> list[EventInfo]:
        msg = self._call({"op": "events", "after": after, "run": run_id, "limit": limit})
        return [_event(e) for e in msg["events"]]

    def subscribe(
        self, callback: Callable[[list[EventInfo]], None], *, run_id: str | None = None
    ) -> _Sub:
        return _Sub(self, callback, run_id)

    def resolve_marker(
        self, run_id: str, marker: str | int, resolution: str, by: str, comment: str | None = None
    ) -> None:
        req = {"op": "resolve", "run": run_id, "marker": marker, "res": resolution, "by": by}
        self._call(req | ({"note": comment} if comment else {}))

    def cache_get(self, key: str) -> CacheEntry | None:
        row = self._call({"op": "cache_get", "key": key})["entry"]
        if row is None:
            return None
        codec, output, cost, created, expires = row
        return CacheEntry(key, "", created, expires, len(output or b""), cost, codec, output)

    def cache_put(
        self, key: str, fn: str, encoded: Encoded, cost_micros: int, expires: float | None
    ) -> None:
        self.append([cache_record(key, fn, *encoded, cost_micros, expires)], sync=False)

    def cache_list(self, limit: int = 100) -> list[CacheEntry]:
        rows = self._call({"op": "cache_list", "limit": limit})["entries"]
        return [CacheEntry(*row) for row in rows]

    def set_budget(
        self, run_id: str, by: str, *, usd_micros: int | None = None, tokens: int | None = None
    ) -> None:
        req = {"op": "budget", "run": run_id, "usd": usd_micros, "tokens": tokens, "by": by}
        self._call(req)

    def proposals(self, state: str | None = None) -> list[Proposal]:
        rows = self._call({"op": "proposals", "state": state})["proposals"]
        return [Proposal(*row) for row in rows]

    def approvals(
        self, *, status: str | None = None, run_id: str | None = None, limit: int = 100
    ) -> list[ApprovalInfo]:
        req = {"op": "approvals", "status": status, "run": run_id, "limit": limit}
        return [approval_row(r) for r in self._call(req)["approvals"]]

    def rearm_step(self, run_id: str, by: str, step: str | int | None = None) -> None:
        self._call({"op": "rearm", "run": run_id, "step": step, "by": by})

    def reset_run(self, run_id: str, by: str, comment: str | None = None) -> None:
        self._call(
            {"op": "reset", "run": run_id, "by": by} | ({"note": comment} if comment else {})
        )

    def gc(self, *, older_than: float, statuses: Sequence[str] = ("completed",)) -> int:
        msg = self._call({"op": "gc", "older_than": older_than, "statuses": list(statuses)})
        return int(msg["deleted"])

    def checkpoints(
        self,
        *,
        thread_id: str | None = None,
        ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[CheckpointRow]:
        req: dict[str, Any] = {"op": "checkpoints", "thread": thread_id, "ns": ns}
        req["cid"] = checkpoint_id  # "id" tags the request on the wire
        req |= {"before": before, "filter": filter, "limit": limit}
        return [_checkpoints.row(r) for r in self._call(req)["rows"]]

    # -- shared rate limits (kept by the owner) and the notification outbox -------------------

    def take_capacity(self, name: str, rpm: int | None, tpm: int | None, tokens: int = 0) -> float:
        req = {"op": "limit", "act": "take", "name": name, "rpm": rpm, "tpm": tpm}
        return float(self._call(req | {"tokens": tokens})["wait"])

    def adjust_capacity(self, name: str, tokens: int) -> None:
        req = {"op": "limit", "act": "adjust", "name": name, "tokens": tokens, "ack": False}
        self._call(req, reply=False)

    def block_capacity(self, name: str, seconds: float) -> None:
        req = {"op": "limit", "act": "block", "name": name, "seconds": float(seconds)}
        self._call(req | {"ack": False}, reply=False)

    def capacity(self) -> list[dict[str, Any]]:
        return list(self._call({"op": "capacity"})["buckets"])

    def notifications(self, *, state: str | None = None, limit: int = 100) -> list[Notice]:
        from letitloop.journal._outbox import notice

        rows = self._call({"op": "notices", "state": state, "limit": limit})["value"]
        return [notice(r) for r in rows]

    def retry_notification(self, key: str) -> None:
        self._call({"op": "notice_retry", "key": key})

    # -- owner administration (not part of the contract) ---------------------------------------

    def sql(self, query: str) -> dict[str, Any]:
        msg = self._call({"op": "sql", "sql": query})
        keys = ("columns", "rows", "truncated", "limit")
        return {k: msg.get(k) for k in keys} | {"truncated": bool(msg.get("truncated"))}

    def stats(self) -> dict[str, Any]:
        return dict(self._call({"op": "stats"})["stats"])

    def quarantine(self, action: str | None = None, lsn: int | None = None) -> dict[str, Any]:
        """Records the owner set aside because it could not fold them; ``action`` "drop" or
        "retry" resolves one (``lsn``) or all of them first."""
        msg = self._call({"op": "quarantine", "action": action, "lsn": lsn})
        return {"rows": msg["rows"], "done": msg["done"]}

    def stop_owner(self) -> int:
        pid = int(self._call({"op": "stop"})["pid"])
        self.close()
        return pid

    def close(self) -> None:
        with self._lock:
            for link in self._pool:
                link.close()
            self._pool.clear()
        self.closed = True


def approval_row(row: list[Any]) -> ApprovalInfo:
    """An ``ApprovalInfo`` from the store's row (JSON columns arrive as text)."""
    import json

    item = dict(zip(ApprovalInfo._fields, row, strict=True))
    for name in ("payload", "schema", "edited"):
        item[name] = json.loads(item[name]) if item[name] is not None else None
    item["timed_out"] = bool(item["timed_out"])
    return ApprovalInfo(**item)


def _run_info(r: dict[str, Any]) -> RunInfo:
    return RunInfo(
        run_id=r["run"],
        workflow=r["wf"],
        key=r["key"],
        status=r["status"],
        epoch=r["epoch"],
        attempt=r["try"],
        created=r["created"],
        updated=r["updated"],
        steps_done=r["done"],
        current_step=r.get("current"),
        holder=r.get("holder"),
        parent=r.get("parent"),
        error=r.get("error"),
        cost_micros=r.get("cost") or 0,
        tokens=r.get("tokens") or 0,
        saved_micros=r.get("saved") or 0,
        active_seconds=r.get("active"),
        budget=(r["budget"][0], r["budget"][1]) if r.get("budget") else None,
    )


def _attempt(a: dict[str, Any]) -> AttemptInfo:
    return AttemptInfo(
        position=a["pos"],
        attempt=a["att"],
        kind=a["kind"] or "step",
        name=a["name"] or "?",
        fingerprint=a["fp"] or "",
        status=a["status"],
        started=a["started"],
        ended=a["ended"],
        codec=a["codec"],
        size=a["size"] or 0,
        error=a["err"],
        next_position=a["next"],
        resolution=a["res"],
        resolved_by=a["res_by"],
        preview=a.get("preview"),
        cost_micros=a.get("cost") or 0,
        tokens_in=a.get("tin") or 0,
        tokens_out=a.get("tout") or 0,
        model=a.get("model"),
        cache=a.get("cache"),
    )
