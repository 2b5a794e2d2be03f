"""A local HTTP server that counts the requests it gets, with their times: the provider whose
limit the tests must stay within."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Counter:
    def __init__(self) -> None:
        self.hits: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        counter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with counter.lock:
                    counter.hits.append((time.monotonic(), self.path))
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def times(self) -> list[float]:
        with self.lock:
            return [t for t, _ in self.hits]

    def max_in_window(self, seconds: float) -> int:
        """The most requests any ``seconds``-long window saw (sliding, half-open)."""
        ts = sorted(self.times())
        best, lo = 0, 0
        for hi, t in enumerate(ts):
            while ts[lo] <= t - seconds:
                lo += 1
            best = max(best, hi - lo + 1)
        return best

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
