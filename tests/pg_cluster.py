"""A throwaway PostgreSQL cluster for the tests and benchmarks: initdb + pg_ctl into a temp dir.

The cluster listens on 127.0.0.1 (a free port) and on a unix socket inside its directory, with
``fsync=on`` and ``synchronous_commit=on`` because durability is what the Postgres journal is
tested for. As root (CI), initdb, pg_ctl and the server run as the ``postgres`` user, since
PostgreSQL refuses to run as root. A watchdog process stops the server and removes the directory
when the process that started it exits in any way (a normal end, an exception, a SIGKILL), so no
postmaster outlives a test run. ``LIL_TEST_PG_DSN`` points the suite at an existing server
instead (its role must be allowed to CREATE DATABASE).

Run ``python tests/pg_cluster.py`` to start one by hand: it prints the DSN and keeps the cluster
until Ctrl-C.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) were not found. Install them with "
    "`apt-get install -y postgresql` (what `make test` does through SYSTEM_PACKAGES), set "
    "LIL_PG_BIN to the directory holding initdb and pg_ctl, or set LIL_TEST_PG_DSN to an "
    "existing server whose role may CREATE DATABASE."
)

# Settings every test cluster runs with: durable commits (the point of the journal), enough
# connections for chaos tests and 16-writer benchmarks, and quick shutdowns.
SERVER_SETTINGS: dict[str, str] = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "300",
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
    "log_line_prefix": "'%m [%p] %d '",
}

ADMIN_USER = "postgres"


class PgUnavailable(RuntimeError):
    """No PostgreSQL server can be started or reached; the message says how to get one."""


def find_bin_dir() -> Path:
    """The directory of initdb/pg_ctl: ``LIL_PG_BIN``, Debian's newest, or the PATH."""
    explicit = os.environ.get("LIL_PG_BIN")
    if explicit:
        path = Path(explicit)
        if (path / "initdb").exists() and (path / "pg_ctl").exists():
            return path
        raise PgUnavailable(f"LIL_PG_BIN={explicit} holds no initdb and pg_ctl. {INSTALL_HINT}")

    def version(p: str) -> tuple[int, ...]:
        m = re.search(r"/postgresql/([\d.]+)/bin", p)
        return tuple(int(x) for x in m.group(1).split(".")) if m else (0,)

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    if found:
        return Path(found[-1]).parent
    # On Debian /usr/local/bin/pg_ctl may be a bare symlink to one version's pg_ctl: resolve it.
    for name in ("initdb", "pg_ctl"):
        which = shutil.which(name)
        if which:
            real = Path(which).resolve().parent
            if (real / "initdb").exists() and (real / "pg_ctl").exists():
                return real
    raise PgUnavailable(INSTALL_HINT)


def _as_server_user() -> dict[str, Any]:
    """subprocess arguments that run a command as ``postgres`` when we are root."""
    if os.geteuid() != 0:
        return {}
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise PgUnavailable(
            "running as root but there is no `postgres` user to run the server as; "
            "`apt-get install -y postgresql` creates it"
        ) from exc
    return {"user": "postgres", "group": "postgres", "extra_groups": []}


def _run(cmd: list[str], *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd="/",
        check=False,
        **_as_server_user(),
    )


def with_database(dsn: str, dbname: str) -> str:
    """``dsn`` (a postgresql:// URL) pointing at database ``dbname`` instead."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + quote(dbname)))


def with_user(dsn: str, user: str) -> str:
    """``dsn`` (a postgresql:// URL) logging in as ``user`` (no password: trust auth)."""
    parts = urlsplit(dsn)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{quote(user)}@{host}"))


@dataclass
class PgServer:
    """A PostgreSQL server the tests may create databases on.

    ``dsn`` is the admin URL (the ``postgres`` database, a superuser role); ``database_dsn``
    makes a fresh database. For a cluster this module started, ``restart``/``stop``/``start``
    drive pg_ctl (the restart-under-load tests need them); an external server refuses them.
    """

    dsn: str
    base_dir: Path | None = None
    bin_dir: Path | None = None
    port: int = 0
    socket_dir: Path | None = None
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _watch_fd: int | None = field(default=None, repr=False)
    _template: str | None = field(default=None, repr=False)

    @property
    def managed(self) -> bool:
        """True when this module started the cluster (so pg_ctl may drive it)."""
        return self.base_dir is not None

    @property
    def data_dir(self) -> Path:
        assert self.base_dir is not None, "an external server has no data directory here"
        return self.base_dir / "data"

    @property
    def log_file(self) -> Path:
        assert self.base_dir is not None, "an external server has no log file here"
        return self.base_dir / "server.log"

    def socket_dsn(self, dbname: str = "postgres") -> str:
        """The URL reaching ``dbname`` over the unix socket (managed clusters only)."""
        self._need_managed("socket_dsn")
        return f"postgresql://{ADMIN_USER}@/{quote(dbname)}?host={self.socket_dir}&port={self.port}"

    # -- pg_ctl -------------------------------------------------------------------------------

    def _need_managed(self, what: str) -> None:
        if not self.managed:
            raise PgUnavailable(
                f"{what} needs a cluster started by tests/pg_cluster.py; LIL_TEST_PG_DSN points "
                "at an external server. Unset LIL_TEST_PG_DSN to let the tests start one."
            )

    def _pg_ctl(self, *args: str, timeout: float = 60.0) -> None:
        assert self.bin_dir is not None
        cmd = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args]
        done = _run(cmd, timeout=timeout)
        if done.returncode != 0:
            tail = self.log_file.read_text(errors="replace")[-2000:] if self.base_dir else ""
            raise PgUnavailable(
                f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}\n{tail}"
            )

    def start(self) -> None:
        """Start the (stopped) cluster and wait until it accepts connections."""
        self._need_managed("start")
        self._pg_ctl("-l", str(self.log_file), "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the cluster: ``fast`` (roll back and disconnect) or ``immediate`` (crash)."""
        self._need_managed("stop")
        self._pg_ctl("-m", mode, "-w", "-t", "60", "stop")

    def restart(self, mode: str = "immediate") -> None:
        """``pg_ctl restart -m MODE``: the default crashes the server like a power cut."""
        self._need_managed("restart")
        self._pg_ctl("-m", mode, "-l", str(self.log_file), "-w", "-t", "60", "restart")

    def running(self) -> bool:
        """Whether the managed cluster's postmaster is up (``pg_ctl status``)."""
        self._need_managed("running")
        assert self.bin_dir is not None
        cmd = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "status"]
        return _run(cmd, timeout=30).returncode == 0

    # -- databases ----------------------------------------------------------------------------

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run one statement in autocommit as the admin role (CREATE DATABASE needs that)."""
        import psycopg

        with psycopg.connect(with_database(self.dsn, dbname), autocommit=True) as conn:
            conn.execute(sql.encode())

    def _ensure_template(self) -> str:
        if self._template is None:
            name = f"lil_tmpl_{os.getpid()}_{secrets.token_hex(3)}"
            self.execute(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
            self._template = name
        return self._template

    def create_database(self, prefix: str = "lil_t") -> str:
        """A fresh empty database (cloned from this session's template); returns its name."""
        name = f"{prefix}_{secrets.token_hex(6)}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._ensure_template()}"')
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, closing any connection still on it (a killed worker's, a listener)."""
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def database_dsn(self, prefix: str = "lil_t") -> str:
        """The URL of a fresh empty database (TCP on 127.0.0.1)."""
        return with_database(self.dsn, self.create_database(prefix))

    # -- teardown -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop a managed cluster and remove its directory; drop the template on an external one."""
        if not self.managed:
            if self._template is not None:
                with contextlib.suppress(Exception):
                    self.drop_database(self._template)
            return
        with contextlib.suppress(Exception):
            if self.running():
                self.stop("fast")
        assert self.base_dir is not None
        shutil.rmtree(self.base_dir, ignore_errors=True)
        if self._watch_fd is not None:
            os.close(self._watch_fd)  # the watchdog sees EOF and exits (nothing left to do)
            self._watch_fd = None
        if self._watchdog is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(timeout=30)


def external_server(dsn: str) -> PgServer:
    """A server someone else runs (``LIL_TEST_PG_DSN``), checked with one connection."""
    import psycopg

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise PgUnavailable(f"LIL_TEST_PG_DSN={dsn} cannot be reached: {exc}") from exc
    return PgServer(dsn=dsn)


def start_cluster(base: Path | None = None) -> PgServer:
    """initdb + pg_ctl start a new cluster in a temp dir; a watchdog removes it when we exit."""
    bin_dir = find_bin_dir()
    base = Path(tempfile.mkdtemp(prefix="lil-pg-")) if base is None else base
    (base / "sock").mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        server_user = _as_server_user()
        uid = pwd.getpwnam(server_user["user"]).pw_uid
        gid = pwd.getpwnam(server_user["user"]).pw_gid
        for p in (base, base / "sock"):
            os.chown(p, uid, gid)
    server = PgServer(dsn="", base_dir=base, bin_dir=bin_dir, socket_dir=base / "sock")
    # The watchdog first: from here on, whatever happens to us, the cluster goes with us.
    read_fd, write_fd = os.pipe()
    server._watchdog = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "watch",
            str(read_fd),
            str(bin_dir),
            str(base),
        ],
        pass_fds=(read_fd,),
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(read_fd)
    server._watch_fd = write_fd
    try:
        init = _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(server.data_dir),
                "-U",
                ADMIN_USER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",  # the cluster is thrown away; its commits are still fsync'd
            ],
            timeout=120,
        )
        if init.returncode != 0:
            raise PgUnavailable(f"initdb failed: {init.stderr.strip() or init.stdout.strip()}")
        with open(server.data_dir / "postgresql.conf", "a") as f:
            f.write("\ninclude = 'lil-test.conf'\n")
        settings = dict(SERVER_SETTINGS, unix_socket_directories=f"'{base / 'sock'}'")
        last_error: PgUnavailable | None = None
        from tests.helpers import free_port  # here: `python tests/pg_cluster.py watch` needs none

        for _ in range(5):  # a free port can be taken between choosing it and binding it
            server.port = free_port()
            conf = dict(settings, port=str(server.port))
            (server.data_dir / "lil-test.conf").write_text(
                "".join(f"{k} = {v}\n" for k, v in conf.items())
            )
            try:
                server.start()
            except PgUnavailable as exc:
                last_error = exc
                continue
            server.dsn = f"postgresql://{ADMIN_USER}@127.0.0.1:{server.port}/postgres"
            return server
        raise last_error or PgUnavailable("the cluster did not start")
    except BaseException:
        server.close()
        raise


def open_server() -> PgServer:
    """The server for this test session: ``LIL_TEST_PG_DSN`` if set, else a new cluster."""
    dsn = os.environ.get("LIL_TEST_PG_DSN")
    return external_server(dsn) if dsn else start_cluster()


@contextlib.contextmanager
def cluster() -> Iterator[PgServer]:
    """``with cluster() as pg:``: a server for a script (the benchmarks), closed after."""
    server = open_server()
    try:
        yield server
    finally:
        server.close()


def _watch(fd: int, bin_dir: str, base: str) -> None:
    """Block until the starter exits (EOF on the pipe), then stop the cluster and remove it."""
    with contextlib.suppress(OSError):
        while os.read(fd, 1):
            pass
    data = Path(base) / "data"
    if (data / "postmaster.pid").exists():
        cmd = [str(Path(bin_dir) / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
        with contextlib.suppress(Exception):
            _run(cmd, timeout=60)
        time.sleep(0.2)
    shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "watch":
        _watch(int(argv[1]), argv[2], argv[3])
        return 0
    with cluster() as server:
        print(server.dsn, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers
    raise SystemExit(main(sys.argv[1:]))
