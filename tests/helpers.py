"""What the tests share, written once: the real ``lil`` CLI (as a subprocess, or in-process through
Click's runner), the environment of a child process, bounded waits, free ports, whether a process
lives, and one real JupyterLab for the browser tests.

Every wait here is bounded and fails with a message that says what it waited for; every process
started here is stopped by its own pid.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from click.testing import Result

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
PathLike = str | os.PathLike[str]

# -- processes ---------------------------------------------------------------------------------


def child_env(
    journal: PathLike | None = None, *, pythonpath: Sequence[PathLike] = (), **extra: str
) -> dict[str, str]:
    """The environment of a process a test starts (``lil``, a workflow script, a worker): this
    process's (conftest's LIL_KEY_DIR among it), PYTHONPATH the checkout first (so the child
    imports this tree's letitloop) then ``pythonpath``, and LIL_JOURNAL ``journal`` or, when
    None, unset: the shell's LIL_JOURNAL never picks a test's journal. ``extra`` goes last."""
    env = {k: v for k, v in os.environ.items() if k != "LIL_JOURNAL"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *map(str, pythonpath)])
    if journal is not None:
        env["LIL_JOURNAL"] = str(journal)
    env.update(extra)
    return env


def pid_alive(pid: int) -> bool:
    """True while any thread of process ``pid`` lives.

    Its leader alone is not enough, and ``os.kill(pid, 0)`` asks only that: a zombie answers it
    as alive, and a SIGKILLed leader turns zombie at once while another thread (DuckDB's, inside
    an fsync) is still exiting and holding the process's files and locks, so "the owner is dead"
    must mean every thread is."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # that thread just ended
        if state not in ("Z", "X"):
            return True
    return False


def owner_pid(pid_file: Path) -> int | None:
    """The pid a journal owner's pid file names, or None if there is no readable pid file."""
    try:
        return int(json.loads(pid_file.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def journal_owner_pid(journal: PathLike) -> int:
    """The pid the owner of the DuckDB journal ``journal`` wrote in its pid file (the owner a
    client of it started); AssertionError if there is none."""
    from letitloop.journal._config import JournalPaths

    pid = owner_pid(JournalPaths(Path(journal)).pid_file)
    assert pid is not None, f"no owner pid file beside {journal}"
    return pid


def pids_matching(*parts: str) -> list[int]:
    """The pids of the processes (this one aside) whose command line has each of ``parts`` in
    one of its arguments: the fake agents of a project, the owners of a journal."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue  # it just ended
        if all(any(part in arg for arg in argv) for part in parts):
            found.append(int(entry))
    return found


def owner_pids(journal: PathLike) -> list[int]:
    """The owner processes of the DuckDB journal ``journal``, found by their command line (one
    that is starting may not have written its pid file yet)."""
    return pids_matching("letitloop.journal.duckdb.owner", str(journal))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (a server started on it may still lose
    it to another process: retry where that matters, as tests/pg_cluster.py does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- waits -------------------------------------------------------------------------------------


def _said(what: str | Callable[[], object], condition: Callable[..., object]) -> str:
    """``what`` in words, or else the condition's source line (a lambda says what it awaits)."""
    if callable(what):
        return str(what())
    if what:
        return what
    try:
        return inspect.getsource(condition).strip()
    except (OSError, TypeError):
        return repr(condition)


def wait_until(
    condition: Callable[[], T],
    timeout: float,
    *,
    what: str | Callable[[], object] = "",
    interval: float = 0.05,
) -> T:
    """Call ``condition`` every ``interval`` s until it returns a true value, and return that
    value. Once ``timeout`` s have passed since the call (the condition is always tried after
    the last pause) raise AssertionError naming ``what`` was awaited: a text, or a function
    called then to describe the state (a worker's output, the rows seen). A condition may itself
    assert, to fail at once (say, when the process it waits on died)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for {_said(what, condition)}"
            )
        time.sleep(interval)


async def wait_until_async(
    condition: Callable[[], T | Awaitable[T]],
    timeout: float,
    *,
    what: str | Callable[[], object] = "",
    interval: float = 0.05,
    pause: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """``wait_until`` inside an event loop: ``condition`` may be a coroutine function, and the
    loop runs between tries (``pause``: ``asyncio.sleep``, or a Textual ``pilot.pause``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout} s waiting for {_said(what, condition)}"
            )
        await pause(interval)


def wait_gone(pid: int, timeout: float = 10, *, what: str = "") -> None:
    """Wait until every thread of process ``pid`` has ended (``pid_alive``), polling every 5 ms
    (a chaos test acts at once on the answer); AssertionError naming it after ``timeout`` s."""
    wait_until(
        lambda: not pid_alive(pid), timeout, what=what or f"process {pid} to end", interval=0.005
    )


# -- lil, the real command line ----------------------------------------------------------------


def lil_command(python: PathLike = sys.executable, *, script: bool = False) -> list[str]:
    """The argv that starts ``lil``: ``python -m letitloop``, or with ``script`` the console
    script ``lil`` installed beside ``python`` (an agent framework's own environment's, say)."""
    if script:
        return [str(Path(python).with_name("lil"))]
    return [str(python), "-m", "letitloop"]


def _lil_env(env: Mapping[str, str] | None, journal: PathLike | None) -> dict[str, str]:
    if env is not None and journal is not None:
        raise TypeError("give env or journal, not both: child_env(journal) builds the env")
    return dict(env) if env is not None else child_env(journal)


def run_lil(
    *args: str,
    env: Mapping[str, str] | None = None,
    journal: PathLike | None = None,
    cwd: PathLike = ROOT,
    timeout: float = 120,
    input: str | None = None,
    python: PathLike = sys.executable,
    script: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``lil ARGS`` as a real subprocess, its output captured as text. It never raises for an
    exit code (the test asserts on it); a run past ``timeout`` s raises TimeoutExpired. The
    environment is ``env`` as given, or else ``child_env(journal)``."""
    return subprocess.run(
        [*lil_command(python, script=script), *args],
        env=_lil_env(env, journal),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )


def lil_ok(*args: str, **options: Any) -> str:
    """``run_lil(*args, **options)`` that must exit 0: its stdout, or AssertionError with the
    command, its exit code and both outputs."""
    done = run_lil(*args, **options)
    said = f"stderr: {done.stderr}\nstdout: {done.stdout}"
    assert done.returncode == 0, f"lil {' '.join(args)} exited {done.returncode}\n{said}"
    return done.stdout


def lil_json(*args: str, **options: Any) -> Any:
    """``lil_ok`` with its stdout read as JSON (pass ``--json`` among ``args``)."""
    return json.loads(lil_ok(*args, **options))


def start_lil(
    *args: str,
    env: Mapping[str, str] | None = None,
    journal: PathLike | None = None,
    cwd: PathLike = ROOT,
    python: PathLike = sys.executable,
) -> subprocess.Popen[str]:
    """``lil ARGS`` started and left running (``lil watch``, a long resume), stdout and stderr
    piped as text; the test stops it (``proc.kill()``, ``proc.communicate``)."""
    return subprocess.Popen(
        [*lil_command(python), *args],
        env=_lil_env(env, journal),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@dataclass(frozen=True)
class Lil:
    """``lil`` as a subprocess bound to one test's environment, folder and limits, so a test
    that runs it often says only what differs: ``lil = Lil(env, tmp_path, timeout=300)``, then
    ``lil.json("runs", "list", "--json")``. A keyword given to a call overrides the bound one."""

    env: Mapping[str, str] | None = None
    cwd: PathLike = ROOT
    timeout: float = 120
    python: PathLike = sys.executable
    script: bool = False

    def _options(self, given: dict[str, Any]) -> dict[str, Any]:
        bound = {"env": self.env, "cwd": self.cwd, "timeout": self.timeout}
        return {**bound, "python": self.python, "script": self.script, **given}

    def run(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """``run_lil``: run to its end, whatever its exit code."""
        return run_lil(*args, **self._options(options))

    def ok(self, *args: str, **options: Any) -> str:
        """``lil_ok``: its stdout, once it exited 0."""
        return lil_ok(*args, **self._options(options))

    def json(self, *args: str, **options: Any) -> Any:
        """``lil_json``: its stdout as JSON, once it exited 0."""
        return lil_json(*args, **self._options(options))


def invoke_lil(
    *args: str,
    journal: PathLike | None = None,
    input: str | bytes | None = None,
    env: Mapping[str, str] | None = None,
) -> Result:
    """``lil [--journal J] ARGS`` in this process through Click's CliRunner: quick, and the
    journal's owner is this test's; ``env`` is set for the call only. Not a process: a crash,
    a signal or an import of the CLI's own are ``run_lil``'s to test."""
    from click.testing import CliRunner

    from letitloop.cli import lil

    argv = (["--journal", str(journal)] if journal is not None else []) + list(args)
    return CliRunner().invoke(lil, argv, input=input, env=env)


def ok(result: Result) -> str:
    """The stdout of an ``invoke_lil`` that must exit 0 (else its output and exception)."""
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def as_json(result: Result) -> Any:
    """The stdout of an ``invoke_lil`` that must exit 0 and say nothing on stderr, as JSON."""
    assert result.stderr == "", result.stderr
    return json.loads(ok(result))


def clean_failure(result: Result, *phrases: str, fix: bool = True) -> str:
    """The stderr of an ``invoke_lil`` that failed cleanly: exit 1, no traceback anywhere, an
    ``error: ...`` line first, a ``  fix: ...`` line (unless ``fix`` is False: a usage error
    of Click's own), and each of ``phrases`` in it."""
    assert result.exit_code == 1, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output, result.output
    assert result.stderr.startswith("error: "), result.stderr
    if fix:
        assert "\n  fix: " in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    return result.stderr


# -- one real JupyterLab -----------------------------------------------------------------------

BUILT = ROOT / "letitloop" / "jupyter" / "labextension"  # the committed prebuilt lab extension
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROME_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _prepare_lab(state: Path, extensions: bool, server_config: dict[str, Any] | None) -> None:
    """Config, user settings and IPython profile under ``state``, as a user's would be."""
    settings = state / ".cfg" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    if server_config is not None:
        (state / ".cfg" / "jupyter_server_config.json").write_text(json.dumps(server_config))
    if extensions:
        data = state / ".data" / "labextensions"
        data.mkdir(parents=True)
        (data / "letitloop").symlink_to(BUILT)  # what the wheel installs into share/jupyter
    startup = state / ".ipython" / "profile_default"
    startup.mkdir(parents=True)  # the kernel loads the extension, as a user's config would
    (startup / "ipython_kernel_config.py").write_text("c.IPKernelApp.extensions = ['letitloop']\n")


@contextmanager
def jupyter_lab(
    root: Path,
    journal: PathLike | None,
    *,
    state: Path | None = None,
    extensions: bool = False,
    server_config: dict[str, Any] | None = None,
    pythonpath: Sequence[PathLike] = (),
    env: Mapping[str, str] | None = None,
    ready_within: float = 90,
) -> Iterator[dict[str, Any]]:
    """A hermetic JupyterLab serving ``root`` on a free port, its kernels loading letitloop,
    stopped after (by its own pid). ``state`` holds its config, runtime files and ``lab.log``
    (default: ``root``); ``extensions`` adds letitloop's server extension and prebuilt lab
    extension; ``server_config`` is written as its ``jupyter_server_config.json``; ``env`` is
    added to the server's (and kernels') environment. With ``journal`` None, no LIL_JOURNAL: the
    server finds its journal from ``root``. Yields ``base`` (the URL), ``token``, ``root`` and
    ``log``; fails with the server's log if it does not answer within ``ready_within`` s."""
    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: make test installs it"
    state = state or root
    _prepare_lab(state, extensions, server_config)
    token, port = secrets.token_hex(16), free_port()
    environ = child_env(
        journal,
        pythonpath=pythonpath,
        JUPYTER_CONFIG_DIR=str(state / ".cfg"),
        JUPYTER_RUNTIME_DIR=str(state / ".runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(state / ".workspaces"),
        IPYTHONDIR=str(state / ".ipython"),
        **(env or {}),
    )
    argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.open_browser=False",
        "--LabApp.news_url=None",
        "--allow-root",
    ]
    if extensions:
        environ["JUPYTER_PATH"] = str(state / ".data")
        argv.append('--ServerApp.jpserver_extensions={"letitloop.jupyter": True}')
    log_path = state / "lab.log"
    log = open(log_path, "w")  # noqa: SIM115
    proc = subprocess.Popen(argv, env=environ, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert proc.poll() is None, (
            f"JupyterLab exited ({proc.returncode}):\n{log_path.read_text()}"
        )
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1).close()
        except OSError:
            return False
        return True

    try:
        wait_until(
            answers,
            ready_within,
            what=lambda: f"JupyterLab to answer:\n{log_path.read_text()}",
            interval=0.25,
        )
        yield {"base": base, "token": token, "root": root, "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium driven by Playwright (a ``Browser``), closed after."""
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: make test installs it"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def lab_api(lab: Mapping[str, Any], path: str, method: str = "GET", body: Any = None) -> Any:
    """A call to a ``jupyter_lab``'s REST API (contents, sessions), as the Lab page makes it."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        f"{lab['base']}{path}?token={lab['token']}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read()
    return json.loads(text) if text else None


def wait_kernel_idle(lab: Mapping[str, Any], path: str, timeout: float = 120) -> str:
    """The id of the kernel of notebook ``path`` once the server reports it idle."""

    def idle() -> str | None:
        for session in lab_api(lab, "/api/sessions"):
            kernel = session["kernel"]
            if session.get("path") == path and kernel.get("execution_state") == "idle":
                return str(kernel["id"])
        return None

    kernel = wait_until(idle, timeout, what=f"an idle kernel for {path}", interval=0.25)
    assert kernel is not None  # wait_until returns a true value
    return kernel


def cells(page: Any) -> Any:
    """The cells of the notebook on show in a Lab page (other tabs' cells are there, hidden)."""
    return page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")


def run_cell(page: Any, index: int, until: Any, timeout: float = 60_000) -> None:
    """Run cell ``index`` of the notebook on show with Shift+Enter until the Playwright locator
    ``until`` is visible, ``timeout`` ms at most a try (a key press sent before the kernel is
    connected is dropped: it is tried three times)."""
    from playwright.sync_api import expect

    for attempt in range(3):
        target = cells(page).nth(index)
        target.scroll_into_view_if_needed()
        target.locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(until).to_be_visible(timeout=timeout)
            return
        except AssertionError:
            if attempt == 2:
                raise


def kill_when_ready(cmd: list[str], *, cwd: Path, env: dict[str, str]) -> None:
    """Run ``cmd`` in a session of its own until it prints ``ready`` on a line, then SIGKILL its
    whole group (a scenario that leaves runs blocked mid-step, as a crash leaves them)."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", (line, proc.stderr.read() if proc.stderr else "")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
