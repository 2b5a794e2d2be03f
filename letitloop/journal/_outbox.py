"""Notifications: webhooks on the events people act on, from a durable outbox, signed, retried.

The outbox is the journal. Every event that needs a person (an approval waiting, an effect in
doubt, a dead-lettered step, a run stopped by its budget, a run failed) is already a durable
event, written in the same fold (DuckDB) or transaction (PostgreSQL) as the change it reports.
The deliverer reads events after its cursor, and in one transaction inserts a row per
notification into ``outbox`` (keyed by an idempotency key derived from the journal and the
event's sequence number) and advances the cursor; so a crash anywhere loses no notification and
never makes a second key for one. Then it POSTs each due row, signed as Standard Webhooks sign
(``webhook-id``, ``webhook-timestamp``, ``webhook-signature: v1,<base64 HMAC-SHA256 of
id.timestamp.body>``: the time of the attempt is signed with the body, so a receiver refuses a
replay), and records the outcome: delivered only on a 2xx answer from the configured URL
itself (a redirect is not followed: it is a failed delivery that says where it pointed), else
retried with exponential backoff until ``max_tries``, then ``failed`` (shown by ``lil notify
list`` and ``lil journal doctor``). A delivery cut off after the receiver got it is sent again
with the same key: receivers drop a ``webhook-id`` they have seen, which makes delivery exactly
once per key.

Only configuration names the receiver: ``LIL_NOTIFY_URL`` or ``[tool.letitloop.notify] url``,
never a request or the journal. Bodies are bounded (``MAX_BODY``), as are retries.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from letitloop.errors import ConfigError
from letitloop.journal._contract import EventInfo, Notice

EVENTS = ("approval_waiting", "effect_in_doubt", "dead_letter", "budget_stop", "run_failed")
STATES = ("pending", "delivered", "failed")
MAX_BODY = 16_000  # bytes of one body: long messages are cut, the body stays valid JSON
MAX_TRIES = 100
# Standard Webhooks' headers: the signature covers "<webhook-id>.<webhook-timestamp>.<body>"
ID_HEADER, TIME_HEADER, SIGNATURE = "webhook-id", "webhook-timestamp", "webhook-signature"
KEY_HEADER = "X-Lil-Idempotency-Key"  # the same as webhook-id (kept for older receivers)
SCAN = 500  # events read per scan
KINDS = ("step", "err", "fail", "suspend")  # the only event kinds that can notify
KEEP_DAYS = 30  # delivered notifications kept for `lil notify list`
STALE = 86400.0  # seconds after which an event no longer notifies (it was missed long ago)
MAX_ROWS = 100_000  # delivered notifications kept at most

OUTBOX_DDL = (
    "CREATE TABLE IF NOT EXISTS outbox(key VARCHAR PRIMARY KEY, seq BIGINT NOT NULL, "
    "event VARCHAR NOT NULL, run_id VARCHAR NOT NULL, created DOUBLE PRECISION NOT NULL, "
    "state VARCHAR NOT NULL, tries INTEGER NOT NULL, next_at DOUBLE PRECISION, "
    "last_error VARCHAR, delivered_at DOUBLE PRECISION, body VARCHAR NOT NULL)",
    "CREATE TABLE IF NOT EXISTS outbox_cursor(id INTEGER PRIMARY KEY, seq BIGINT NOT NULL)",
)
_COLS = "key, seq, event, run_id, created, state, tries, next_at, last_error, delivered_at, body"


@dataclass(frozen=True)
class NotifyConfig:
    """Where and how notifications go, from ``[tool.letitloop.notify]`` or the environment.

    Attributes:
        url: the receiver (http or https); ``LIL_NOTIFY_URL`` overrides the file's ``url``.
        secret: the HMAC-SHA256 key, from the environment variable ``secret_env`` names
            (default ``LIL_NOTIFY_SECRET``): a secret does not belong in pyproject.toml. A
            Standard Webhooks secret (``whsec_`` + base64) is its decoded bytes; any other
            value is its UTF-8 bytes.
        format: ``"json"`` (letitloop's body) or ``"slack"`` (an incoming webhook's ``text``).
        events: which events notify (default: all five).
        max_tries: deliveries of one notification before it is reported as failed.
        backoff: seconds before the second try; each later wait doubles, up to ``max_backoff``.
        timeout: seconds one delivery may take.
    """

    url: str
    secret: bytes | None = None
    format: str = "json"
    events: frozenset[str] = field(default_factory=lambda: frozenset(EVENTS))
    max_tries: int = 8
    backoff: float = 1.0
    max_backoff: float = 300.0
    timeout: float = 5.0

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")) or len(self.url) > 2000:
            raise ConfigError(
                f"the notification url must be an http:// or https:// URL, got {self.url!r}"[:300],
                fix='set [tool.letitloop.notify] url = "https://hooks.example.com/lil" or '
                "LIL_NOTIFY_URL",
            )
        if self.format not in ("json", "slack"):
            raise ConfigError(f"notify format must be 'json' or 'slack', got {self.format!r}")
        if not self.events <= set(EVENTS):
            raise ConfigError(
                f"unknown notify events {sorted(self.events - set(EVENTS))}",
                fix=f"choose from {', '.join(EVENTS)}",
            )
        if not 1 <= self.max_tries <= MAX_TRIES or not 0 <= self.backoff <= self.max_backoff:
            raise ConfigError(
                f"notify needs 1 <= max_tries <= {MAX_TRIES} and 0 <= backoff <= max_backoff",
                fix="e.g. max_tries = 8, backoff = 1.0",
            )

    def delay(self, tries: int) -> float:
        return float(min(self.max_backoff, self.backoff * 2 ** max(0, tries - 1)))


def load_config(start: Path) -> NotifyConfig | None:
    """The notification settings for a journal at ``start`` (None: notifications are off)."""
    from letitloop.journal._config import tool_table

    table, where = tool_table("notify", start)
    url = os.environ.get("LIL_NOTIFY_URL") or table.get("url")
    if not url:
        return None
    known = {"url", "secret_env", "format", "events", "max_tries", "backoff", "max_backoff"}
    if not set(table) <= known | {"timeout"}:
        raise ConfigError(
            f"[tool.letitloop.notify] in {where} has unknown keys {sorted(set(table) - known)}",
            fix=f"use only {', '.join(sorted(known | {'timeout'}))}",
        )
    secret_env = str(table.get("secret_env", "LIL_NOTIFY_SECRET"))
    secret = os.environ.get(secret_env)
    try:
        return NotifyConfig(
            url=str(url),
            secret=signing_key(secret, secret_env) if secret else None,
            format=str(table.get("format", os.environ.get("LIL_NOTIFY_FORMAT", "json"))),
            events=frozenset(table.get("events", EVENTS)),
            max_tries=int(table.get("max_tries", 8)),
            backoff=float(table.get("backoff", 1.0)),
            max_backoff=float(table.get("max_backoff", 300.0)),
            timeout=float(table.get("timeout", 5.0)),
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"[tool.letitloop.notify] in {where}: {exc}") from None


def classify(kind: str, data: dict[str, Any]) -> str | None:
    """The notification an event makes, or None."""
    if kind == "step":
        return "approval_waiting" if data.get("kind") == "approval" and data.get("ask") else None
    err = _err(data)
    if kind == "err":
        return "dead_letter" if err.get("dead") else None
    if kind == "fail":
        kind_of = str(err.get("type", ""))
        if kind_of.endswith("InDoubtError"):
            return "effect_in_doubt"
        if kind_of.endswith(("DeadLetteredError", "Cancelled")):
            return None  # said by the dead letter itself; a cancel is a person's own act
        return "run_failed"
    if kind == "suspend":
        return "budget_stop" if "would pass the budget" in str(data.get("reason", "")) else None
    return None


def _err(data: dict[str, Any]) -> dict[str, Any]:
    err = data.get("err")
    return err if isinstance(err, dict) else {}


def notice_key(journal_id: str, seq: int) -> str:
    raw = f"{journal_id}/{seq}".encode()
    return "lil-n-" + hashlib.sha256(raw).hexdigest()[:32]


_TITLES = {
    "approval_waiting": "approval waiting",
    "effect_in_doubt": "side effect in doubt",
    "dead_letter": "step dead-lettered",
    "budget_stop": "run stopped by its budget",
    "run_failed": "run failed",
}


def _what(event: str, e: EventInfo) -> str:
    d = e.data or {}
    err = _err(d)
    if event == "approval_waiting":
        return f"step {e.name!r} waits for a decision: `lil approvals show` or the lab"
    if event == "budget_stop":
        return str(d.get("reason", ""))
    return f"{err.get('type', '')}: {err.get('message', '')}".strip(": ")


def body(event: str, e: EventInfo, key: str, journal_id: str, fmt: str) -> str:
    """The JSON body of one notification (cut to ``MAX_BODY`` bytes, still valid JSON)."""
    what = _what(event, e)[:4000]
    text = f"letitloop: {_TITLES[event]} in run {e.run_id}: {what}"[:6000]
    if fmt == "slack":
        doc: dict[str, Any] = {"text": text}
    else:
        doc = {
            "id": key,
            "event": event,
            "journal": journal_id,
            "run_id": e.run_id[:2000],
            "step": e.name[:2000] if e.name else None,
            "position": e.position,
            "seq": e.seq,
            "ts": e.ts,
            "text": text,
        }
    out = json.dumps(doc, ensure_ascii=True, sort_keys=True)
    return out if len(out) <= MAX_BODY else json.dumps({"id": key, "text": text[:2000]})


def signing_key(secret: str, where: str = "LIL_NOTIFY_SECRET") -> bytes:
    """The HMAC key a secret stands for: a Standard Webhooks ``whsec_<base64>`` secret's bytes
    (so their libraries verify with the same string), else the text's UTF-8 bytes."""
    if not secret.startswith("whsec_"):
        return secret.encode()
    import base64
    import binascii

    try:
        key = base64.b64decode(secret[6:] + "=" * (-len(secret[6:]) % 4), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise ConfigError(
            f"{where} starts with whsec_ but the rest is not base64",
            fix="use the secret exactly as it was given (whsec_ and base64), or any other text",
        )
    return key


def sign(secret: bytes, msg_id: str, timestamp: int, data: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "<msg_id>.<timestamp>.<data>">``, as Standard Webhooks sign."""
    import base64

    signed = f"{msg_id}.{timestamp}.".encode() + data
    return "v1," + base64.b64encode(hmac.new(secret, signed, hashlib.sha256).digest()).decode()


def _opener() -> Any:
    """urllib without redirects (imported only when a notification is posted). A 3xx is an
    answer, not a new address: urllib would resend the POST as a GET without its body (and
    with the signature), and the outbox would record a delivery that never was."""
    import urllib.request

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # urllib then raises HTTPError with the 3xx

    return urllib.request.build_opener(NoRedirects)


def post(cfg: NotifyConfig, key: str, event: str, data: bytes) -> str | None:
    """Deliver one body; None when the configured URL itself took it (2xx), else what went
    wrong (a redirect says where it pointed: it is not followed)."""
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json", KEY_HEADER: key, "X-Lil-Event": event}
    headers["User-Agent"] = "letitloop-notify"
    if cfg.secret is not None:
        now = int(time.time())
        headers |= {ID_HEADER: key, TIME_HEADER: str(now)}
        headers[SIGNATURE] = sign(cfg.secret, key, now, data)
    req = urllib.request.Request(cfg.url, data=data, headers=headers, method="POST")
    try:
        with _opener().open(req, timeout=cfg.timeout) as resp:
            resp.read(1024)
            return None if 200 <= resp.status < 300 else f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            where = str(exc.headers.get("Location", "nowhere"))[:200]
            return (
                f"HTTP {exc.code}: the receiver redirects to {where}; redirects are not followed "
                "(set the notify url to the address that takes the POST)"
            )
        return f"HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"[:300]


def notice(row: Sequence[Any]) -> Notice:
    key, seq, event, run_id, created, state, tries, next_at, error, delivered, text = row[:11]
    return Notice(
        str(key),
        int(seq),
        str(event),
        str(run_id),
        float(created),
        str(state),
        int(tries),
        next_at,
        error,
        delivered,
        str(text),
    )


class Outbox:
    """The outbox over one SQL connection (DuckDB's cursor or a psycopg connection).

    ``sql`` runs one statement and returns its rows; ``atomic`` runs a function in one
    transaction; ``events_after`` reads events in order after a sequence number."""

    def __init__(
        self,
        cfg: NotifyConfig,
        journal_id: str,
        sql: Callable[[str, list[Any]], list[tuple[Any, ...]]],
        atomic: Callable[[Callable[[], Any]], Any],
        events_after: Callable[[int, int], list[EventInfo]],
        head: Callable[[], int] | None = None,
    ) -> None:
        self.cfg, self.journal_id = cfg, journal_id
        self.sql, self.atomic, self.events_after = sql, atomic, events_after
        self.head = head or self._head
        self.rounds = 0

    def setup(self) -> None:
        for ddl in OUTBOX_DDL:
            self.sql(ddl, [])

    def scan(self) -> int:
        """Turn new events into outbox rows, with the cursor, in one transaction."""

        def scan() -> int:
            rows = self.sql("SELECT seq FROM outbox_cursor WHERE id = 1", [])
            cursor = int(rows[0][0]) if rows else -1
            if cursor < 0:  # a first scan starts at the journal's end: no notices for the past
                self.sql("INSERT INTO outbox_cursor VALUES (1, ?)", [self.head()])
                return 0
            events = self.events_after(cursor, SCAN)
            made = 0
            now = time.time()
            for e in events:
                event = classify(e.kind, e.data or {})
                if event is None or event not in self.cfg.events or e.ts < now - STALE:
                    continue  # (an old event: journaled while notifications were off)
                key = notice_key(self.journal_id, e.seq)
                text = body(event, e, key, self.journal_id, self.cfg.format)
                self.sql(
                    f"INSERT INTO outbox ({_COLS}) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, NULL, "
                    "NULL, ?) ON CONFLICT DO NOTHING",
                    [key, e.seq, event, e.run_id, now, now, text],
                )
                made += 1
            if events:
                self.sql("UPDATE outbox_cursor SET seq = ? WHERE id = 1", [events[-1].seq])
            return made

        return int(self.atomic(scan))

    def _head(self) -> int:
        last = 0
        while True:  # the journal's last event (read in pages: events_after is all we have)
            page = self.events_after(last, 10_000)
            if not page:
                return last
            last = page[-1].seq

    def due(self, limit: int = 50) -> list[Notice]:
        rows = self.sql(
            f"SELECT {_COLS} FROM outbox WHERE state = 'pending' AND next_at <= ? "
            "ORDER BY seq LIMIT ?",
            [time.time(), limit],
        )
        return [notice(r) for r in rows]

    def deliver(self, n: Notice) -> bool:
        """Post one due notice and record the outcome; True when it was delivered."""
        problem = post(self.cfg, n.key, n.event, n.body.encode())
        tries = n.tries + 1
        if problem is None:
            self.sql(
                "UPDATE outbox SET state = 'delivered', tries = ?, delivered_at = ?, "
                "last_error = NULL WHERE key = ?",
                [tries, time.time(), n.key],
            )
            return True
        state = "failed" if tries >= self.cfg.max_tries else "pending"
        self.sql(
            "UPDATE outbox SET state = ?, tries = ?, next_at = ?, last_error = ? WHERE key = ?",
            [state, tries, time.time() + self.cfg.delay(tries), problem, n.key],
        )
        return False

    def next_due(self) -> float | None:
        rows = self.sql("SELECT min(next_at) FROM outbox WHERE state = 'pending'", [])
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

    def pump(self, between: Callable[[], None] | None = None) -> int:
        """One round: scan, then deliver what is due; returns how many were delivered.
        ``between`` runs before each delivery (the owner answers `lil notify` there, so a
        receiver that hangs delays an answer by one delivery's timeout at most)."""
        self.scan()
        delivered = 0
        for n in self.due():
            if between is not None:
                between()
            delivered += self.deliver(n)
        self.rounds += 1
        if self.rounds % 1000 == 1:
            self.prune()
        return delivered

    def prune(self) -> None:
        """Keep the outbox bounded: delivered rows go after ``KEEP_DAYS``, and beyond
        ``MAX_ROWS`` the oldest delivered ones first (pending and failed rows stay: they are
        what people must still learn about, and their count is bounded by the events)."""
        self.sql(
            "DELETE FROM outbox WHERE state = 'delivered' AND delivered_at < ?",
            [time.time() - KEEP_DAYS * 86400],
        )
        rows = self.sql("SELECT count(*) FROM outbox WHERE state = 'delivered'", [])
        extra = int(rows[0][0]) - MAX_ROWS if rows else 0
        if extra > 0:
            self.sql(
                "DELETE FROM outbox WHERE key IN (SELECT key FROM outbox WHERE state = "
                "'delivered' ORDER BY seq LIMIT ?)",
                [extra],
            )

    def pending(self) -> bool:
        """Whether a notification still waits for a (re)try."""
        return self.next_due() is not None


def list_notices(
    sql: Callable[[str, list[Any]], list[tuple[Any, ...]]], state: str | None, limit: int
) -> list[Notice]:
    if state is not None and state not in STATES:
        raise ConfigError(f"notification state must be one of {', '.join(STATES)}, got {state!r}")
    try:
        where, params = ("WHERE state = ?", [state]) if state else ("", [])
        rows = sql(
            f"SELECT {_COLS} FROM outbox {where} ORDER BY seq DESC LIMIT ?",
            [*params, max(0, min(int(limit), 10_000))],
        )
    except Exception as exc:  # no outbox yet: notifications were never configured
        if "outbox" in str(exc).lower():
            return []
        raise
    return [notice(r) for r in rows]


def retry_sql() -> str:
    return "UPDATE outbox SET state = 'pending', tries = 0, next_at = 0 WHERE key = ?"
