"""Hostile input: every bad request gets an error answer and the server keeps serving; a client
that never reads is dropped, costing bounded memory; HTTP without the token is refused; the
server listens on loopback only unless forced; settings that would let an agent decide for a
person are refused; an act the user did not allow is refused naming the setting."""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2

from tests.mcp.mcp_helpers import (
    call,
    env_for,
    http_server,
    http_session,
    lil,
    make_project,
    refused,
    stdio_session,
)

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


class Raw:
    """``lil mcp`` over pipes, spoken to byte by byte (no SDK to tidy the input)."""

    def __init__(self, project: Path, **env: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "letitloop", "mcp"],
            cwd=project,
            env=env_for(project) | env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.buffer = b""
        self.send(INIT)
        assert self.answer(0)["result"]["serverInfo"]["name"] == "letitloop"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def answer(self, ident: Any, seconds: float = 60) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + seconds
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == ident:
                    return dict(message)
            left = deadline - time.monotonic()
            assert left > 0, f"no answer to {ident!r}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                assert chunk, "the server closed stdout"
                self.buffer += chunk

    def tool(self, ident: int, name: Any, arguments: Any) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})
        return self.answer(ident)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(20)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except BrokenPipeError:  # a write still buffered for a server that is gone
                    pass


def _error_text(answer: dict[str, Any]) -> str:
    """An answer that is an error, either a JSON-RPC error or a tool result with isError."""
    if "error" in answer:
        return str(answer["error"]["message"])
    assert answer["result"]["isError"] is True, answer
    return str(answer["result"]["content"][0]["text"])


def test_bad_requests_get_errors_and_the_server_keeps_serving(duck_project: Path) -> None:
    raw = Raw(duck_project)
    try:
        ok = raw.tool(1, "list_runs", {"limit": 2})
        assert len(ok["result"]["structuredContent"]["runs"]) == 2
        # wrong types
        assert "limit must be of type integer" in _error_text(
            raw.tool(2, "list_runs", {"limit": "2"})
        )
        assert raw.tool(3, "list_runs", [1, 2])["error"]["code"] == -32602  # not an object
        assert raw.tool(4, 12345, {})["error"]["code"] == -32602  # a name that is no text
        said = _error_text(raw.tool(5, "show_run", {"run": 7}))
        assert "run must be of type string" in said
        said = _error_text(raw.tool(6, "list_runs", {"colour": "red"}))
        assert "unknown argument 'colour'" in said
        # huge arguments: over a bound of the schema, and over the message cap
        said = _error_text(raw.tool(7, "list_runs", {"text": "x" * 300_000}))
        assert "longer than 200 characters" in said and "xxxx" not in said
        huge = {"jsonrpc": "2.0", "id": 8, "method": "tools/call"}
        huge["params"] = {"name": "propose_splice", "arguments": {"code": "y" * (3 << 20)}}
        raw.send(huge)
        assert "over 1048576 bytes" in _error_text(raw.answer(8))
        raw.send(b"this is not json\n")  # answered with a parse error (id null)
        raw.send(b'{"jsonrpc": "2.0", "id": 9, "method": "no/such/method"}\n')
        assert raw.answer(9)["error"]["code"] == -32601
        # unknown tools, and a person's decision asked for
        said = _error_text(raw.tool(10, "drop_table", {}))
        assert "unknown tool 'drop_table'" in said and "list_runs" in said
        said = _error_text(raw.tool(11, "approve", {"id": "x"}))
        assert "a person's decision" in said and "lil approvals approve" in said
        # still serving, and the journal is untouched
        again = raw.tool(12, "list_runs", {"limit": 100})
        assert len(again["result"]["structuredContent"]["runs"]) == 7
    finally:
        raw.close()


def test_a_client_that_never_reads_is_dropped_with_bounded_memory(duck_project: Path) -> None:
    raw = Raw(duck_project, LIL_MCP_WRITE_SECONDS="3")
    try:
        request = {"name": "step_output", "arguments": {"run": "flows.ok:a", "position": 0}}
        request["arguments"] |= {"length": 16_000}
        started = time.monotonic()
        peak = 0
        sent = 0
        # it asks and asks and never reads: the pipe fills, then the server's queue
        while raw.proc.poll() is None and time.monotonic() - started < 60:
            ready = select.select([], [raw.proc.stdin], [], 0.2)[1]
            if ready and sent < 2000:
                body = {"jsonrpc": "2.0", "id": 100 + sent, "method": "tools/call"}
                try:
                    raw.send(body | {"params": request})
                except BrokenPipeError:  # the server dropped us meanwhile
                    break
                sent += 1
            peak = max(peak, _rss(raw.proc.pid))
        assert raw.proc.wait(30) == 2, "the server kept a client that reads nothing"
        assert raw.proc.stderr is not None
        said = raw.proc.stderr.read().decode()
        assert "dropped the client: it read nothing for 3 s" in said
        print(f"never-reading client: {sent} requests, server peak RSS {peak} KiB")
        assert peak < 400 * 1024, f"{peak} KiB"  # bounded queues: nothing piles up
        assert 10 < sent < 1000  # it stopped reading requests it could not answer
        # the journal and its owner are fine: the next client is served
        assert json.loads(lil(duck_project, "runs", "list", "--json").stdout)
    finally:
        raw.close()


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


async def test_http_needs_the_token_and_keeps_serving(duck_project: Path) -> None:
    with http_server(duck_project) as (url, token, proc):
        path = duck_project / ".letitloop" / "mcp.token"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # made private to the user
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as http:
            for auth in ({}, {"authorization": "Bearer wrong"}, {"authorization": token}):
                answer = await http.post(url, json=body, headers=headers | auth)
                assert answer.status_code == 401, answer.text
                assert "Bearer" in answer.headers["www-authenticate"]
            answer = await http.post(url, content=b"x" * (2 << 20), headers=headers)
            assert answer.status_code == 401  # refused before the body is read
        async with http_session(url, token) as s:
            assert len((await call(s, "list_runs", {"limit": 3}))["runs"]) == 3
            said = await refused(s, "list_runs", {"limit": 0})
            assert "is below 1" in said
        async with http_session(url, token) as s:  # a second session after that
            assert (await call(s, "rate_limits"))["limits"]
        assert proc.poll() is None


async def test_http_hostile_requests_get_errors_and_the_server_keeps_serving(
    duck_project: Path,
) -> None:
    """The stdio cases over Streamable HTTP, with the token: each bad request is answered with
    an error, and the next session is served as before."""
    with http_server(duck_project) as (url, token, proc):
        async with http_session(url, token) as s:
            assert "limit must be of type integer" in await refused(s, "list_runs", {"limit": "2"})
            assert "run must be of type string" in await refused(s, "show_run", {"run": 7})
            said = await refused(s, "list_runs", {"colour": "red"})
            assert "unknown argument 'colour'" in said
            said = await refused(s, "list_runs", {"text": "x" * 300_000})
            assert "longer than 200 characters" in said and "xxxx" not in said
            said = await refused(s, "drop_table", {})
            assert "unknown tool 'drop_table'" in said and "list_runs" in said
            said = await refused(s, "approve", {"id": "x"})
            assert "a person's decision" in said and "lil approvals approve" in said
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "authorization": f"Bearer {token}",
        }
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.post(url, content=b"this is not json", headers=headers)
            assert answer.status_code == 400, answer.text
            huge = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
            huge["params"] = {"name": "propose_splice", "arguments": {"code": "y" * (3 << 20)}}
            answer = await http.post(url, content=json.dumps(huge).encode(), headers=headers)
            assert answer.status_code == 413, (answer.status_code, answer.text[:200])
        async with http_session(url, token) as s:  # still serving, the journal untouched
            assert len((await call(s, "list_runs", {"limit": 100}))["runs"]) == 7
        assert proc.poll() is None


def test_loopback_only_unless_forced(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", str(tmp_path / "j.duckdb"))
    done = lil(project, "mcp", "--http", "--host", "0.0.0.0", "--port", "0", check=False)
    assert done.returncode == 1
    assert "loopback interface only" in done.stderr and "--allow-remote" in done.stderr
    token = project / ".letitloop" / "mcp.token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text("a-token-others-can-read-0123456789\n")
    token.chmod(0o644)
    done = lil(project, "mcp", "--http", "--port", "0", check=False)
    assert done.returncode == 1 and "only you can read" in done.stderr
    token.chmod(0o600)
    with http_server(project, "--host", "0.0.0.0", "--allow-remote") as (url, _, proc):
        assert url.startswith("http://0.0.0.0:")
    assert proc.stderr is not None


async def test_an_act_not_allowed_is_refused_naming_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "project" / ".letitloop" / "journal.duckdb"
    project = make_project(tmp_path / "project", str(path), [])
    code = "import flows; flows.ok()"  # a journal with a run
    subprocess.run([sys.executable, "-c", code], cwd=project, env=env_for(project), check=True)
    async with stdio_session(project) as s:
        listed = {t.name for t in (await s.list_tools()).tools}
        assert "cancel_run" not in listed and "resume_run" not in listed
        said = await refused(s, "cancel_run", {"run": "x"})
        assert "cancel_run is not enabled" in said
        assert f'add "cancel_run" to allow in [tool.letitloop.mcp] of {project}' in said
        for decision in ("approve", "resolve_effect", "apply_splice"):
            said = await refused(s, decision, {})
            assert "a person's decision" in said and "lil-tui" in said
    from tests.conftest import _kill_owner

    _kill_owner(path)


def test_settings_that_hand_a_decision_to_an_agent_are_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", str(tmp_path / "j.duckdb"), ["approve"])
    done = lil(project, "mcp", check=False)
    assert done.returncode == 1
    assert "approving an approval is a person's decision" in done.stderr
    project = make_project(tmp_path / "q", str(tmp_path / "j.duckdb"), ["cancel_rnu"])
    done = lil(project, "mcp", check=False)
    assert "unknown tool 'cancel_rnu' (did you mean 'cancel_run'?)" in done.stderr
