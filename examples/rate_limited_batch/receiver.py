"""A local webhook receiver for letitloop's notifications: it checks each one, then shows it.

    python receiver.py

It listens on the address of ``[tool.letitloop.notify] url`` in this folder's pyproject.toml,
verifies each delivery as Standard Webhooks sign it (``webhook-signature``: HMAC-SHA256 of
``<webhook-id>.<webhook-timestamp>.<body>`` with $LIL_NOTIFY_SECRET, the default below when it
is not set), refuses one stamped more than five minutes from its clock (a replay), drops a
notification whose ``webhook-id`` it has already seen (a delivery retried after the receiver
got it), prints one line for each new one and appends it to notifications.jsonl. Ctrl-C stops
it. See docs/notifications.md, "What a receiver gets".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
import time
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
SECRET = os.environ.setdefault("LIL_NOTIFY_SECRET", "cookbook-example-secret").encode()
LOG = HERE / "notifications.jsonl"
TOLERANCE = 300  # seconds between a delivery's stamp and our clock, at most
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
        key = self.headers.get("webhook-id", "")
        stamp = self.headers.get("webhook-timestamp", "")
        signed = f"{key}.{stamp}.".encode() + body
        expected = base64.b64encode(hmac.new(SECRET, signed, hashlib.sha256).digest()).decode()
        offered = self.headers.get("webhook-signature", "").split()
        if not any(hmac.compare_digest(f"v1,{expected}", sig) for sig in offered):
            print("refused a notification with a bad or missing signature", flush=True)
            self.send_error(401)
            return
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > TOLERANCE:
            print("refused a notification stamped too far from now (a replay?)", flush=True)
            self.send_error(401)
            return
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
