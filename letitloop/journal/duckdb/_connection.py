"""How a client reaches a journal's owner: connect and say hello, start the owner when nobody
answers, send a request and resend it after the owner died (its leases taken back first).

Client side: never imports duckdb; the owner runs as ``python -S -m
letitloop.journal.duckdb.owner`` in its own session.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from _thread import allocate_lock  # threading.Lock, without importing threading
from pathlib import Path

from letitloop import errors as _errors
from letitloop.errors import JournalUnavailableError, JournalVersionError
from letitloop.journal._config import JournalPaths, env_float, make_journal_dir
from letitloop.journal.duckdb import _files, _wire
from letitloop.journal.duckdb._link import Link, raise_error

TYPE_CHECKING = False  # importing typing costs several ms: only for the type checker
if TYPE_CHECKING:
    from typing import Any

# How long a call waits for the owner's answer before raising (an owner that is SIGSTOPped,
# hung or swamped). A workflow's own writes and reads (open_run, append, output...) wait
# longer, so a briefly stopped owner costs a pause, not a failed run.
READ_TIMEOUT = env_float("LIL_READ_TIMEOUT", 15.0)
WRITE_TIMEOUT = env_float("LIL_WRITE_TIMEOUT", 120.0)
WORKFLOW_OPS = frozenset({"open_run", "append", "release", "relock", "output", "cache_get"})
START_KILLS = 5  # owners killed by a signal while starting that are replaced before giving up

_forks = [0]  # how many times this process was forked into (a system call saved per request)
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))
_spawned: list[_Child] = []  # owners this process started, until they are reaped
_READY_FD = 3  # where a spawned owner finds the write end of its readiness pipe


class _Child:
    """An owner process this process spawned (what ``subprocess.Popen`` would say of it:
    ``import subprocess`` costs a cold start a few ms, ``os.posix_spawn`` nothing)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler): it is gone
                self.returncode = 0
                return 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        """Its exit status (negative: killed by that signal); ``TimeoutError`` if it runs on."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"owner {self.pid} still runs")
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode


def owner_path() -> list[str]:
    """The owner's module path (it starts with ``-S``, without ``site``): this package's root,
    then this process's path as ``site`` and ``PYTHONPATH`` made it, less the script's own
    directory, so the owner imports the same letitloop, msgpack and duckdb as its client."""
    pkg_root = str(Path(__file__).resolve().parents[3])  # holds letitloop/
    out = [pkg_root]
    for entry in sys.path[0 if sys.flags.safe_path else 1 :]:
        if entry and entry not in out:
            out.append(entry)
    return out


def pid_from(pid_file: Path) -> int:
    """The pid an owner wrote to its pid file, or 0."""
    import json

    try:
        return int(json.loads(_files.read_regular(pid_file))["pid"])
    except (OSError, ValueError, KeyError, TypeError, _errors.JournalError):
        return 0


def reap() -> None:
    """Collect owners this process started that have exited, so none stays a zombie."""
    for proc in list(_spawned):
        if proc.poll() is not None:
            _spawned.remove(proc)


def _child_files(log_fd: int, ready_w: int) -> list[tuple[Any, ...]]:
    """An owner's files: stdin from /dev/null, stdout and stderr to its log, the readiness
    pipe as ``_READY_FD``; every other inheritable descriptor of this process closed (as
    ``close_fds`` does: a pipe a caller's shell waits on must not live on in the owner)."""
    keep = {0, 1, 2, log_fd, ready_w}
    actions: list[tuple[Any, ...]] = []
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd") if n.isdigit()]
    except OSError:
        fds = []
    for fd in fds:
        if fd not in keep and fd != _READY_FD:
            try:
                if os.get_inheritable(fd):
                    actions.append((os.POSIX_SPAWN_CLOSE, fd))
            except OSError:  # (the listing's own descriptor, closed by now)
                pass
    actions.append((os.POSIX_SPAWN_DUP2, ready_w, _READY_FD))  # (clears close-on-exec)
    actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
    actions.append((os.POSIX_SPAWN_DUP2, log_fd, 1))
    actions.append((os.POSIX_SPAWN_DUP2, log_fd, 2))
    return actions


class _Foreign(JournalUnavailableError):
    """The owner that answered serves another journal (see ``_files.foreign``)."""


class OwnerConnection:
    """The connections of an ``OwnerJournal``: a pool of links, one per concurrent call."""

    paths: JournalPaths
    location: str
    closed: bool
    session: str
    connect_timeout: float
    read_timeout: float
    write_timeout: float
    journal_id: str
    owner_pid: int
    owner_features: frozenset[str]
    _pool: list[Link]
    _leases: dict[str, str]
    _lazy: dict[str, dict[str, Any]]
    _start_kills: int
    _ready_fd: int
    _spawning: Any  # a lock: one thread at a time starts an owner and reads its ready pipe
    _spawns: int  # owners this connection started, so a waiting thread sees one was
    _log_from: int
    _pid: int
    _forks: int

    def _init_connection(self, path: Path) -> None:
        self.paths = JournalPaths(path)
        self.location = str(path)
        self.closed = False
        self._pool = []
        self._lock = allocate_lock()
        self._leases = {}  # run -> the invocation (one call) holding it
        self._lazy = {}  # run -> its lazy open_run, until a write made its opening durable
        self._pid = os.getpid()
        self._forks = _forks[0]
        self._new_session()
        self.connect_timeout = env_float("LIL_CONNECT_TIMEOUT", 30.0)
        self.read_timeout = env_float("LIL_READ_TIMEOUT", READ_TIMEOUT)
        self.write_timeout = env_float("LIL_WRITE_TIMEOUT", WRITE_TIMEOUT)
        self._start_kills = 0
        self.journal_id = ""
        self.owner_pid = 0
        self.owner_features = frozenset()
        self._ready_fd = -1
        self._spawning = allocate_lock()
        self._spawns = 0
        self._log_from = 0

    def _new_session(self) -> None:
        self.session = f"{os.getpid()}@{socket.gethostname()}/{os.urandom(6).hex()}"

    def _connect(self, answer_by: float | None = None) -> Link:
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
        foreign = ""
        while True:
            spawns = self._spawns  # before trying: a thread that started one meanwhile counts
            sock = socket.socket(socket.AF_UNIX)
            try:
                sock.connect(str(self.paths.socket))
                link = Link(sock)
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
            except _Foreign as exc:  # not this journal's owner: this journal needs one of its own
                sock.close()
                foreign = exc.message
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
                    f"{self.connect_timeout:.0f} s"
                    + (f"; only {foreign}" if foreign else "")
                    + self._owner_log_tail(),
                    fix="run `lil journal doctor` to see why; check that the directory is on a "
                    "local disk and writable",
                )
            # Threads of one process that all lost their owner come here together: one at a
            # time starts an owner and waits on its ready pipe (the pipe is the connection's),
            # and a thread that waited while another started one tries that owner first.
            with self._spawning:
                if self._spawns != spawns:
                    continue
                if spawned_at < 0 or (now - spawned_at > 2.0 and not self._spawn_alive()):
                    self._spawn()
                    spawned_at = now
                if self._ready_fd >= 0:  # our owner says when it listens (or closes the pipe)
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
            raise_error(hello["error"])
        if hello["protocol"] != _wire.PROTOCOL:
            raise JournalVersionError(
                f"the journal owner (pid {hello.get('pid')}, letitloop {hello.get('version')}) "
                f"speaks protocol {hello['protocol']}, this process speaks {_wire.PROTOCOL}",
                fix="run `lil journal stop` once no run is executing; the next call starts an "
                "owner of this version",
            )
        why = _files.foreign(self.paths, hello)
        if why is not None:
            raise _Foreign(why)
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
            status = proc.wait(timeout=5)
        except TimeoutError:  # still running: the connect loop will see what it does
            return False
        if status < 0 and self._start_kills < START_KILLS:
            self._start_kills += 1  # killed from outside (OOM killer, a kill -9): not its fault
            return True
        if status != 0:
            raise JournalUnavailableError(
                f"the journal owner for {self.location} exited with status {status}"
                f"{self._owner_log_tail()}",
                fix="read the owner's log above; `lil journal doctor` checks the usual causes",
            )
        return False

    def _no_answer(self, op: object, deadline: float, limit: float | None = None) -> Exception:
        """The error for an owner that took the connection but did not answer in time."""
        pid = self.owner_pid or pid_from(self.paths.pid_file)
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
        reap()
        return bool(_spawned)

    def _spawn(self) -> None:
        """Start an owner detached (its own session), its output in the owner's log, in the
        journal's directory, holding no file of ours but the write end of the readiness pipe."""
        reap()
        make_journal_dir(self.paths.root)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(owner_path())
        if self._ready_fd >= 0:
            os.close(self._ready_fd)
        self._ready_fd, ready_w = os.pipe()
        log_fd = _files.open_regular(self.paths.owner_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            self._log_from = os.lseek(log_fd, 0, os.SEEK_END)  # people see what it wrote
            # -S: no site (its .pth files cost more than the owner's imports); -P: not this
            # process's working directory first on its path (a module there must not shadow
            # one of the owner's); the owner moves to the journal's directory itself
            args = [sys.executable, "-S", "-P", "-m", "letitloop.journal.duckdb.owner"]
            args += ["--journal", self.location, "--ready-fd", str(_READY_FD)]
            pid = os.posix_spawn(
                sys.executable,
                args,
                env,
                file_actions=_child_files(log_fd, ready_w),
                setsid=True,
            )
        finally:
            os.close(log_fd)
            os.close(ready_w)
        _spawned.append(_Child(pid))
        self._spawns += 1

    def _owner_log_tail(self) -> str:
        try:
            with open(_files.open_regular(self.paths.owner_log, os.O_RDONLY), "rb") as f:
                f.seek(self._log_from)
                text = f.read().decode(errors="replace")
        except (OSError, _errors.JournalError):
            return ""
        tail = text.strip().splitlines()[-8:]
        return ("; the owner's log ends:\n    " + "\n    ".join(tail)) if tail else ""

    def _take(self, answer_by: float | None = None) -> Link:
        if _forks[0] != self._forks:  # forked: the parent's sockets and leases are not ours
            self._forks, self._pid = _forks[0], os.getpid()
            self._pool, self._leases, self._lazy = [], {}, {}
            self._new_session()
        with self._lock:
            if self._pool:
                return self._pool.pop()
        return self._connect(answer_by)

    def _give(self, link: Link) -> None:
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
            raise_error(msg["error"])
        return msg

    def _reconnect(self, deadline: float) -> Link:
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
                raise_error(msg["error"])
            try:
                self._reopen(link, msg.get("unknown") or (), deadline)
            except TimeoutError:
                link.close()
                raise self._no_answer("open_run", deadline) from None
            except OSError:
                link.close()
                continue
            return link

    def _reopen(self, link: Link, unknown: Any, deadline: float) -> None:
        """Open again, durably, the runs this process opened lazily that the new owner does not
        know (the old one died before a write carried their opening): their records resend."""
        for run_id in unknown:
            again = self._lazy.get(run_id)
            if again is not None:
                reply = link.call(dict(again), max(0.001, deadline - time.monotonic()))
                if not reply.get("ok"):
                    link.close()
                    raise_error(reply["error"])
