"""The counter server: the offline model, the side effects and the person's inbox, on 127.0.0.1.

Everything the benchmark judges comes from here, never from a framework's own report. Every
model call a worker makes is answered by a deterministic model (its reply is a function of the
call's lane and sequence number and of the ``tok-XXXXXXXX`` tokens in its prompt, so a run that
lost state answers differently) after ``latency_ms``, and logged with its tokens (prompt and
reply words). Every side effect (a payment, an e-mail) is applied and logged, with no
idempotency of its own, as with SMTP. A question to a person is answered ``decide_ms`` later, and
each question counts as one act of a person. The final answer and a framework's plea for a
person (an error that names a command) are kept per run.

The harness arms it to kill at an exact point: the response to the N-th side effect (or model
call) of the current process is held until the harness has killed the worker, or a model reply
carries ``balloon`` (the worker then allocates until the kernel's OOM killer ends it).

Requests are JSON bodies of at most ``MAX_BODY`` bytes over HTTP/1.0 on loopback; a bad one gets
a 400 and touches nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 256_000  # an agent framework's prompt holds the whole conversation
MAX_EVENTS = 200_000  # per run: far beyond any scenario, so a runaway worker cannot eat memory
TOKEN = re.compile(r"tok-([0-9a-f]{8})")
WORDS = (
    "signal quarter revenue churn model latency budget launch customer roadmap hiring risk "
    "pricing audit invoice retention forecast margin pipeline review"
).split()


def reply_for(scenario: str, key: str, prompt: str, words: int) -> tuple[str, str]:
    """The model's deterministic reply to a call: (text, its token)."""
    seen = sorted(set(TOKEN.findall(prompt)))
    digest = hashlib.sha256(f"{scenario}|{key}|{','.join(seen)}".encode()).digest()
    token = digest[:4].hex()
    body = [WORDS[(digest[4 + i % 28] + i) % len(WORDS)] for i in range(words)]
    return f"{' '.join(body)} tok-{token}", token


def _request(kind: str, lane: str, seq: int, pid: int, more: dict[str, Any]) -> dict[str, Any]:
    """A worker's request as the run's log keeps it: what, where in the plan, which process,
    when it came (and, once answered, when it went: ``t_resp``)."""
    head = {"kind": kind, "key": f"{lane}/{seq}", "lane": lane, "seq": seq, "pid": pid}
    return head | {"t_recv": time.monotonic(), "t_resp": None} | more


@dataclass
class Arm:
    """Where the harness wants the current process stopped: ``what`` is ``effect`` or ``call``,
    ``index`` counts those requests of process ``pid`` from 1; ``balloon`` sends an OOM order
    in the reply instead of holding it."""

    what: str
    index: int
    pid: int
    balloon: bool = False
    before_reply: Callable[[], None] | None = None
    hit: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    seen: int = 0


@dataclass
class RunLog:
    """What one run did, as seen from outside: every request, in arrival order."""

    scenario: str
    latency_ms: int
    reply_words: int
    decide_ms: int
    events: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None
    answered_at: float | None = None
    answers: int = 0
    stopped: dict[str, Any] | None = None
    questions: list[dict[str, Any]] = field(default_factory=list)
    arm: Arm | None = None
    cond: threading.Condition = field(default_factory=threading.Condition)

    def count(self, pid: int) -> int:
        with self.cond:
            return sum(1 for e in self.events if e["pid"] == pid)

    def wait_count(self, pid: int, n: int, timeout: float) -> bool:
        """Wait until process ``pid`` made ``n`` requests (True) or ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while sum(1 for e in self.events if e["pid"] == pid) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.5))
        return True

    def snapshot(self) -> list[dict[str, Any]]:
        with self.cond:
            return [dict(e) for e in self.events]


class CounterServer:
    """The server (see the module docstring): ``start()``, ``url``, ``open_run``, ``stop()``."""

    def __init__(self) -> None:
        self.runs: dict[str, RunLog] = {}
        self.lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self.httpd is not None, "start() the server first"
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> CounterServer:
        server = self

        class Handler(_Handler):
            counter = server

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        with self.lock:
            for run in self.runs.values():
                if run.arm is not None:
                    run.arm.release.set()
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()

    def open_run(
        self, run_id: str, scenario: str, latency_ms: int, reply_words: int, decide_ms: int
    ) -> RunLog:
        log = RunLog(scenario, latency_ms, reply_words, decide_ms)
        with self.lock:
            self.runs[run_id] = log
        return log

    def run(self, run_id: str) -> RunLog | None:
        with self.lock:
            return self.runs.get(run_id)

    # -- the endpoints (called on the handler's thread) ---------------------------------------

    def handle(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        log = self.run(str(body.get("run", "")))
        if log is None:
            raise ValueError(f"unknown run {body.get('run')!r}")
        pid = int(body.get("pid", 0))
        if path == "/model":
            return self._model(log, body, pid)
        if path == "/effect":
            return self._effect(log, body, pid)
        if path == "/ask":
            return self._ask(log, body, pid)
        if path == "/asked":
            return self._asked(log, body)
        if path == "/lookup":
            key = str(body["key"])
            with log.cond:
                return {
                    "count": sum(1 for e in log.events if e["kind"] == "effect" and e["key"] == key)
                }
        if path == "/answer":
            with log.cond:
                log.answer, log.answers = str(body["answer"])[:4000], log.answers + 1
                log.answered_at = time.monotonic()
                log.cond.notify_all()
            return {"ok": True}
        if path == "/stopped":
            with log.cond:
                log.stopped = {k: str(body.get(k, ""))[:4000] for k in ("error", "message", "fix")}
                log.cond.notify_all()
            return {"ok": True}
        raise ValueError(f"unknown endpoint {path}")

    def _log(self, log: RunLog, event: dict[str, Any]) -> dict[str, Any]:
        with log.cond:
            if len(log.events) >= MAX_EVENTS:
                raise ValueError("too many events for one run")
            log.events.append(event)
            log.cond.notify_all()
        return event

    def _armed(self, log: RunLog, what: str, pid: int) -> Arm | None:
        arm = log.arm
        if arm is None or arm.what != what or arm.pid != pid:
            return None
        arm.seen += 1
        return arm if arm.seen == arm.index else None

    def _model(self, log: RunLog, body: dict[str, Any], pid: int) -> dict[str, Any]:
        lane, seq = str(body["lane"])[:100], int(body["seq"])
        prompt = str(body.get("prompt", ""))
        key = f"{lane}/{seq}"
        text, token = reply_for(log.scenario, key, prompt, log.reply_words)
        sizes = {"in": len(prompt.split()), "out": log.reply_words + 1}
        event = self._log(log, _request("call", lane, seq, pid, sizes))
        arm = self._armed(log, "call", pid)
        time.sleep(log.latency_ms / 1000)
        reply: dict[str, Any] = {"text": text, "token": token}
        if arm is not None:
            if arm.balloon:
                if arm.before_reply is not None:
                    arm.before_reply()
                reply["balloon"] = True
                arm.hit.set()
            else:
                arm.hit.set()
                arm.release.wait(60)
                raise ConnectionAbortedError("the worker was killed")
        with log.cond:
            event["t_resp"] = time.monotonic()
        reply["usage"] = {"input_tokens": event["in"], "output_tokens": event["out"]}
        return reply

    def _effect(self, log: RunLog, body: dict[str, Any], pid: int) -> dict[str, Any]:
        lane, seq = str(body["lane"])[:100], int(body["seq"])
        memo = str(body.get("memo", ""))[:200]
        detail = {k: body.get(k) for k in ("kind", "to", "amount")}
        more = {"memo": memo, "detail": json.dumps(detail, sort_keys=True)}
        event = self._log(log, _request("effect", lane, seq, pid, more))
        receipt = "rcpt-" + hashlib.sha256(f"{event['key']}|{memo}".encode()).hexdigest()[:8]
        arm = self._armed(log, "effect", pid)
        if arm is not None:  # the effect happened; the worker dies before it hears so
            arm.hit.set()
            arm.release.wait(60)
            raise ConnectionAbortedError("the worker was killed")
        with log.cond:
            event["t_resp"] = time.monotonic()
        return {"receipt": receipt}

    def _ask(self, log: RunLog, body: dict[str, Any], pid: int) -> dict[str, Any]:
        lane, seq = str(body["lane"])[:100], int(body["seq"])
        event = self._log(log, _request("ask", lane, seq, pid, {}))
        with log.cond:
            qid = len(log.questions)
            question = {"qid": qid, "key": event["key"], "decided_at": None}
            log.questions.append(question)

        def decide() -> None:  # the person reads the question and approves it
            with log.cond:
                question["decided_at"] = time.monotonic()
                log.cond.notify_all()

        timer = threading.Timer(log.decide_ms / 1000, decide)
        timer.daemon = True
        timer.start()
        with log.cond:
            event["t_resp"] = time.monotonic()
        return {"qid": qid}

    def _asked(self, log: RunLog, body: dict[str, Any]) -> dict[str, Any]:
        qid = int(body["qid"])
        with log.cond:
            if not 0 <= qid < len(log.questions):
                raise ValueError(f"no question {qid}")
            decided = log.questions[qid]["decided_at"] is not None
        return {"decided": decided, "approved": decided}


class _Handler(BaseHTTPRequestHandler):
    """JSON in, JSON out; a malformed request is answered 400 and changes nothing."""

    counter: CounterServer
    timeout = 30  # seconds a client may take to send its request

    def do_POST(self) -> None:
        try:
            size = int(self.headers.get("Content-Length", "0"))
            if not 0 < size <= MAX_BODY:
                raise ValueError(f"body of {size} bytes (1 to {MAX_BODY} allowed)")
            body = json.loads(self.rfile.read(size))
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
            out = self.counter.handle(urlsplit(self.path).path, body)
        except ConnectionAbortedError:
            self.close_connection = True
            return
        except (ValueError, KeyError, TypeError) as exc:
            self._send(400, {"error": str(exc)[:500]})
            return
        self._send(200, out)

    def do_GET(self) -> None:
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        try:
            out = self.counter.handle(urlsplit(self.path).path, dict(query))
        except (ValueError, KeyError, TypeError) as exc:
            self._send(400, {"error": str(exc)[:500]})
            return
        self._send(200, out)

    def _send(self, status: int, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except OSError:  # the worker died meanwhile: nothing to tell it
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass
