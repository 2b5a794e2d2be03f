"""A local webhook receiver for letitloop's notifications: it checks each one, then shows it.

    python receiver.py

It listens on the address of ``[tool.letitloop.notify] url`` in this folder's pyproject.toml,
verifies each body's ``X-Lil-Signature`` (HMAC-SHA256 with $LIL_NOTIFY_SECRET, the default
below when it is not set), drops a notification whose ``X-Lil-Idempotency-Key`` it has already
seen (a delivery retried after the receiver got it), prints one line for each new one and
appends it to notifications.jsonl. Ctrl-C stops it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
SECRET = os.environ.setdefault("LIL_NOTIFY_SECRET", "cookbook-example-secret").encode()
LOG = HERE / "notifications.jsonl"
MAX_BODY = 64 * 1024  # letitloop's bodies are at most 16 kB: anything bigger is not one
seen: set[str] = set()
lock = threading.Lock()


def address() -> tuple[str, int, str]:
    """Host, port and path of the url the journal's owner posts to."""
    config = tomllib.loads((HERE / "pyproject.toml").read_text())
    url = urlsplit(config["tool"]["letitloop"]["notify"]["url"])
    return url.hostname or "127.0.0.1", url.port or 80, url.path


class Hook(BaseHTTPRequestHandler):
    timeout = 10  # seconds a client may take to send its request

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if self.path != PATH or not 0 < length <= MAX_BODY:
            self.send_error(404 if self.path != PATH else 413)
            return
        body = self.rfile.read(length)
        expected = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, self.headers.get("X-Lil-Signature", "")):
            print("refused a notification with a bad or missing signature", flush=True)
            self.send_error(401)
            return
        key = self.headers.get("X-Lil-Idempotency-Key", "")
        doc = json.loads(body)
        with lock:
            new = key not in seen
            seen.add(key)
            if new:
                with LOG.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(doc) + "\n")
        if new:
            print(f"[{doc['event']}] {doc['text']}", flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per notification is enough


HOST, PORT, PATH = address()

if __name__ == "__main__":
    server = ThreadingHTTPServer((HOST, PORT), Hook)
    print(f"listening on http://{HOST}:{PORT}{PATH}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
