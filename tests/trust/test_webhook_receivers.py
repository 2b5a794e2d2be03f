"""A webhook receiver cannot fool the outbox, and can refuse a replay (issue 35, point 5).

Real parts: real HTTP servers on 127.0.0.1 (one that redirects, one that takes the POST), the
real DuckDB owner delivering from its outbox, runs of real processes, Standard Webhooks' own
Python library verifying what arrives. On the old code urllib followed a 301/302/303 by sending
a GET without the body (with the signature headers) to where it pointed, and the outbox
recorded ``delivered`` although nothing arrived; the signature covered the body alone, so a
captured delivery could be replayed at any time.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from letitloop.journal._outbox import load_config, post
from tests.helpers import run_lil, wait_until
from tests.notify.receiver import Receiver
from tests.notify.test_webhooks import _env, _flows, _settings

SECRET = "s3cret-for-tests"


class Redirector:
    """Answers every POST to /hook with ``code`` and ``Location: /landing``; records every
    request it gets, to any path, with any method."""

    def __init__(self, code: int) -> None:
        self.seen: list[tuple[str, str, bytes]] = []
        me = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                me.seen.append((self.command, self.path, self.rfile.read(n)))
                if self.path == "/hook":
                    self.send_response(code)
                    self.send_header("Location", "/landing")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_HEAD = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def notify_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("LIL_NOTIFY_SECRET", SECRET)
    yield


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failed_delivery_that_says_where_it_pointed(
    code: int, notify_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    redirector = Redirector(code)
    try:
        monkeypatch.setenv("LIL_NOTIFY_URL", redirector.url)
        cfg = load_config(tmp_path)
        assert cfg is not None
        problem = post(cfg, "lil-n-test", "run_failed", b'{"id": "lil-n-test"}')
        assert problem is not None, "a redirect was taken for a delivery"
        assert f"HTTP {code}" in problem and "redirects to /landing" in problem, problem
        assert "not followed" in problem
        assert [(m, p) for m, p, _ in redirector.seen] == [("POST", "/hook")], redirector.seen
    finally:
        redirector.close()


@pytest.mark.timeout(180)
def test_the_outbox_never_records_a_redirect_as_delivered(journal_path: Path) -> None:
    """The owner delivers a real run_failed notice to a receiver that answers 302: the notice
    is retried, then failed, with the redirect as its error; the address it pointed to got
    nothing, and `lil notify list` never said delivered."""
    _settings(journal_path, backoff=0.2, max_backoff=0.5, max_tries=2)
    redirector = Redirector(302)
    try:
        env = _env(journal_path, redirector.url)
        _flows(env, "fail")

        def listed() -> list[dict[str, Any]]:
            done = run_lil("notify", "list", "--json", env=env)
            assert done.returncode == 0, done.stderr
            return list(json.loads(done.stdout))

        wait_until(
            lambda: [n["state"] for n in listed()] == ["failed"], 60, what=listed, interval=0.1
        )
        (notice,) = listed()
        assert notice["tries"] == 2 and "HTTP 302" in notice["last_error"], notice
        assert "redirects to /landing" in notice["last_error"], notice
        assert [(m, p) for m, p, _ in redirector.seen] == [("POST", "/hook")] * 2
    finally:
        redirector.close()


@pytest.mark.timeout(180)
def test_the_signature_covers_the_attempts_time_so_a_replay_is_refused(
    journal_path: Path,
) -> None:
    """Each delivery carries Standard Webhooks' headers; their library verifies it. The
    signature covers webhook-id, webhook-timestamp (the attempt's time) and the body: a retry
    is signed anew at its own time, a changed timestamp fails, and a delivery older than the
    receiver's tolerance (what a replay is) is refused."""
    _settings(journal_path, backoff=1.5, max_backoff=1.5)
    receiver = Receiver(status=500)  # the first attempt fails; the retry is taken

    def then_ok(headers: dict[str, str], body: bytes) -> None:
        receiver.status = 500 if len(receiver.deliveries()) < 2 else 200

    receiver.on_post = then_ok
    try:
        env = _env(journal_path, receiver.url)
        before = int(time.time())
        _flows(env, "fail")
        wait_until(
            lambda: len(receiver.deliveries()) >= 2, 60, what=receiver.deliveries, interval=0.1
        )
        (first_h, first), (again_h, again) = receiver.deliveries()[:2]
        hook = Webhook(SECRET.encode())
        for headers, body in ((first_h, first), (again_h, again)):
            assert hook.verify(body, headers)["event"] == "run_failed"
            assert headers["webhook-id"] == json.loads(body)["id"]
            assert before <= int(headers["webhook-timestamp"]) <= time.time() + 1
        assert first_h["webhook-id"] == again_h["webhook-id"] and first == again
        assert int(again_h["webhook-timestamp"]) > int(first_h["webhook-timestamp"])
        assert again_h["webhook-signature"] != first_h["webhook-signature"]
        moved = dict(again_h, **{"webhook-timestamp": str(int(time.time()))})
        if moved["webhook-timestamp"] != again_h["webhook-timestamp"]:
            with pytest.raises(WebhookVerificationError):
                hook.verify(again, moved)  # a fresh time on an old signature
        with pytest.raises(WebhookVerificationError):  # an old time with the old body: a replay
            hook.verify(again, dict(again_h, **{"webhook-timestamp": str(before - 600)}))
    finally:
        receiver.close()


def test_a_standard_webhooks_secret_verifies_with_their_library_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LIL_NOTIFY_SECRET=whsec_<base64>: the key is the decoded bytes, so the receiver hands
    their library the very string it was given."""
    given = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    receiver = Receiver()
    try:
        monkeypatch.setenv("LIL_NOTIFY_URL", receiver.url)
        monkeypatch.setenv("LIL_NOTIFY_SECRET", given)
        cfg = load_config(tmp_path)
        assert (
            cfg is not None and post(cfg, "lil-n-abc", "run_failed", b'{"id":"lil-n-abc"}') is None
        )
        ((headers, body),) = receiver.deliveries()
        assert Webhook(given).verify(body, headers) == {"id": "lil-n-abc"}
    finally:
        receiver.close()
