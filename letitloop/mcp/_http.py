"""``lil mcp --http``: the server over Streamable HTTP, on the loopback interface, behind a token.

Every request must carry ``Authorization: Bearer TOKEN``; the token is compared in constant
time, and a request without it (or with another) is answered 401 before anything else reads it.
The token comes from ``$LIL_MCP_TOKEN``, else from the token file (``.letitloop/mcp.token`` of
the project by default), which is created private to the user (0600) with a fresh random token
when missing and refused when others can read it. Binding to an address other than loopback is
refused unless the user forces it (``--allow-remote``), and then the risk is said. Bodies,
sessions and idle time are bounded (``Limits``); the SDK guards loopback against DNS rebinding.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
import stat
from pathlib import Path
from typing import Any

import anyio

from letitloop.errors import ConfigError
from letitloop.mcp._follow import Follow
from letitloop.mcp._server import build
from letitloop.mcp._service import Service
from letitloop.mcp._stdio import say

PATH = "/mcp"
REMOTE_RISK = (
    "anyone who can reach {where} and holds the token can read this journal and take the "
    "actions [tool.letitloop.mcp] allows; the traffic is not encrypted (prefer an SSH tunnel "
    "or a TLS proxy in front of a loopback server)"
)


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless forced; when forced, say the risk."""
    if loopback(host):
        return
    if not allow_remote:
        raise ConfigError(
            f"lil mcp --http listens on the loopback interface only, not {host!r}",
            fix="leave --host at 127.0.0.1 (reach it remotely through an SSH tunnel), or pass "
            "--allow-remote if you accept that " + REMOTE_RISK.format(where=f"{host}"),
        )
    say("WARNING: " + REMOTE_RISK.format(where=host))


def load_token(path: Path) -> tuple[str, bool]:
    """The token ($LIL_MCP_TOKEN, else ``path``'s, else a new one written to ``path`` 0600), and
    whether it was just made."""
    given = os.environ.get("LIL_MCP_TOKEN")
    if given:
        if len(given) < 16:
            raise ConfigError(
                "LIL_MCP_TOKEN is shorter than 16 characters", fix="use a long random token"
            )
        return given, False
    try:
        info = path.lstat()
    except FileNotFoundError:
        return _new_token(path), True
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ConfigError(
            f"the token file {path} must be a regular file of yours that only you can read",
            fix=f"chmod 600 {path} (or delete it: a new token is made)",
        )
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < 16:
        raise ConfigError(f"the token in {path} is too short", fix=f"delete {path}")
    return token, False


def _new_token(path: Path) -> str:
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    return token


class TokenGate:
    """ASGI: HTTP requests without the bearer token are answered 401, unread."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.digest = hashlib.sha256(token.encode()).digest()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            body = (
                b'{"error": "unauthorized: send Authorization: Bearer TOKEN (the token is in '
                b'the token file lil mcp printed at start)"}'
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="lil mcp"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Any) -> bool:
        presented = b""
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization" and value[:7].lower() == b"bearer ":
                presented = value[7:].strip()
        return hmac.compare_digest(hashlib.sha256(presented).digest(), self.digest)


def app_for(svc: Service, follow: Follow, token: str, host: str) -> tuple[Any, Any]:
    """The token-gated ASGI app and its inner Starlette app (whose lifespan runs the sessions)."""
    limits = svc.limits
    inner = build(svc, follow).streamable_http_app(
        streamable_http_path=PATH,
        host=host,
        max_request_body_size=limits.max_message,
        session_idle_timeout=limits.session_idle,
        max_sessions=limits.sessions,
    )
    return TokenGate(inner, token), inner


async def serve_http(
    svc: Service, host: str, port: int, token_file: Path, allow_remote: bool
) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM)."""
    import uvicorn

    check_host(host, allow_remote)
    token, made = load_token(token_file)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror}", fix="choose another --port"
        ) from None
    sock.listen(64)
    bound = sock.getsockname()[1]
    follow = Follow(svc, svc.limits)
    gate, _ = app_for(svc, follow, token, host)
    where = f"[{host}]" if ":" in host else host
    if made:
        say(f"new token written to {token_file} (mode 0600): {token}")
    source = "$LIL_MCP_TOKEN" if os.environ.get("LIL_MCP_TOKEN") else str(token_file)
    say(f"Streamable HTTP on http://{where}:{bound}{PATH} (token: {source})")
    config = uvicorn.Config(
        gate,
        log_level="warning",
        lifespan="on",
        limit_concurrency=64,
        timeout_keep_alive=5,
        h11_max_incomplete_event_size=64 * 1024,
    )
    server = uvicorn.Server(config)
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(follow.run)
            await server.serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        sock.close()
