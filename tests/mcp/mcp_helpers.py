"""What the ``lil mcp`` tests share: a scripted project and journal (written by real workflows in
a subprocess, one of them SIGKILLed mid-run), the real server as a subprocess, and the mcp SDK's
own client over stdio and over Streamable HTTP."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.helpers import kill_when_ready, wait_until

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CLIENT = types.Implementation(name="lil-tests", version="1.0")
BY = "mcp:lil-tests/1.0"
ALL_ACTS = [
    "resume_run",
    "retry_run",
    "cancel_run",
    "fork_run",
    "propose_splice",
    "start_task",
    "verify_receipt",
]
RECEIPT_KEY = "9f2c4e7a1b3d5f6081a2c3e4d5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718"
AGENT = """
import pathlib
pathlib.Path("src").mkdir(exist_ok=True)
pathlib.Path("src/out.txt").write_text("done\\n")
"""


def make_project(root: Path, journal: str, allow: list[str] | None = None) -> Path:
    """A project: pyproject.toml (its [tool.letitloop.mcp] allow list, notifications that fail
    fast), the workflows, a file to splice, a task with a stand-in agent."""
    root.mkdir(parents=True, exist_ok=True)
    allow_line = f"allow = {json.dumps(allow)}" if allow is not None else ""
    (root / "pyproject.toml").write_text(
        textwrap.dedent(f"""
        [project]
        name = "scripted"

        [tool.letitloop.mcp]
        {allow_line}

        [tool.letitloop.notify]
        max_tries = 1
        backoff = 0.1
        """)
    )
    shutil.copy(HERE / "flows.py", root / "flows.py")
    (root / "app.py").write_text('def greet(name):\n    return f"Hello, {name}"\n')
    (root / "tasks").mkdir(exist_ok=True)
    (root / "agent.py").write_text(AGENT)
    (root / "tasks" / "write.toml").write_text(
        textwrap.dedent(f"""
        goal = "write src/out.txt"
        paths = ["src/**"]
        agents = [{{ name = "stand-in", command = ["{sys.executable}", "agent.py"] }}]

        [[checks]]
        kind = "exists"
        paths = ["src/out.txt"]
        """)
    )
    (root / ".journal").write_text(journal)
    return root


def env_for(project: Path) -> dict[str, str]:
    """The environment of every process of a test: this tree, the project's journal, a
    notification receiver that is down, a short lease on PostgreSQL, the receipts' key."""
    return os.environ | {
        "PYTHONPATH": str(ROOT),
        "LIL_JOURNAL": (project / ".journal").read_text(),
        "LIL_NOTIFY_URL": "http://127.0.0.1:9/hook",
        "LIL_NOTIFY_SECRET": "s3cret-for-tests",
        "LIL_LEASE_TTL": "3",
        "LIL_RECEIPT_KEY": RECEIPT_KEY,
    }


def script_journal(project: Path) -> None:
    """Run the scenario in a subprocess and SIGKILL it once its last two runs are blocked."""
    kill_when_ready(
        [sys.executable, str(HERE / "scenario.py"), str(project)], cwd=project, env=env_for(project)
    )
    wait_until(
        lambda: run_status(project, "flows.slow:d") == "interrupted",
        60,
        what=lambda: f"flows.slow:d interrupted (it is {run_status(project, 'flows.slow:d')})",
        interval=0.1,
    )


def make_receipt(project: Path) -> None:
    """A git repository with one commit, and a receipt signed for it."""
    env = env_for(project) | {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "app.py"], ["commit", "-qm", "first"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True, timeout=60)
    lil(project, "receipt", "run", "--out", "receipt.json", "--", sys.executable, "-c", "1")


def lil(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "letitloop", *args],
        cwd=project,
        env=env_for(project),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def lil_json(project: Path, *args: str) -> Any:
    return json.loads(lil(project, *args, "--json").stdout)


def run_status(project: Path, run: str) -> str | None:
    done = lil(project, "runs", "show", run, "--json", check=False)
    return json.loads(done.stdout)["run"]["status"] if done.returncode == 0 else None


async def until(read: Any, wanted: Any, seconds: float = 30.0) -> None:
    """Wait until ``await read()`` gives ``wanted`` (asked through the server itself)."""
    import anyio

    deadline = time.monotonic() + seconds
    while (got := await read()) != wanted:
        assert time.monotonic() < deadline, f"still {got!r} after {seconds} s, not {wanted!r}"
        await anyio.sleep(0.2)


# -- the server and the SDK's client ----------------------------------------------------------


@asynccontextmanager
async def stdio_session(
    project: Path, *extra: str, client: types.Implementation = CLIENT
) -> AsyncIterator[ClientSession]:
    """The SDK's client, connected to ``lil mcp`` started by the SDK over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "letitloop", "mcp", *extra],
        cwd=project,
        env=env_for(project),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=client, message_handler=_collect) as session,
    ):
        await session.initialize()
        yield session


NOTICES: list[str] = []


async def _collect(message: Any) -> None:
    """The client's handler: every resources/updated notification's URI is kept."""
    root = getattr(message, "root", message)
    if isinstance(root, types.ResourceUpdatedNotification):
        NOTICES.append(str(root.params.uri))


@contextmanager
def http_server(project: Path, *extra: str) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    """``lil mcp --http --port 0`` as a subprocess: its URL, its token, the process."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "letitloop", "mcp", "--http", "--port", "0", *extra],
        cwd=project,
        env=env_for(project),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        said = ""
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            said += line
            found = re.search(r"Streamable HTTP on (http://\S+/mcp)", line)
            url = found.group(1) if found else None
        assert url is not None, said
        token = (project / ".letitloop" / "mcp.token").read_text().strip()
        yield url, token, proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stderr is not None:
            proc.stderr.close()


@asynccontextmanager
async def http_session(
    url: str, token: str, client: types.Implementation = CLIENT
) -> AsyncIterator[ClientSession]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, client_info=client, message_handler=_collect) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> Any:
    """A tool's structured answer (failing the test on an error answer)."""
    result = await session.call_tool(name, args or {})
    assert isinstance(result, types.CallToolResult)
    text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
    assert not result.is_error, text
    assert json.loads(text) == result.structured_content  # the text is the same JSON
    return result.structured_content


async def refused(session: ClientSession, name: str, args: Any = None) -> str:
    """A tool's error answer, as the agent reads it."""
    result = await session.call_tool(name, args)
    assert isinstance(result, types.CallToolResult)
    assert result.is_error, result
    return str(result.content[0].text)  # type: ignore[union-attr]
