"""A local webhook receiver: keeps every delivery (headers and exact body), can be "down"."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """``status`` answers every delivery, unless ``by_event`` names the delivery's event
    (``X-Lil-Event``): a receiver that takes one kind of notification and refuses another."""

    def __init__(self, port: int = 0, status: int = 200, by_event: dict[str, int] | None = None):
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.status = status
        self.by_event = dict(by_event or {})
        self.on_post: Callable[[dict[str, str], bytes], None] | None = None  # before answering
        self.lock = threading.Lock()
        me = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with me.lock:
                    me.got.append((headers, body))
                if me.on_post is not None:
                    me.on_post(headers, body)
                self.send_response(me.by_event.get(headers.get("x-lil-event", ""), me.status))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def deliveries(self) -> list[tuple[dict[str, str], bytes]]:
        with self.lock:
            return list(self.got)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
