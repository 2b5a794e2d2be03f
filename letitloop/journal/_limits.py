"""Shared rate-limit buckets: the arithmetic every backend runs, and the bounds on what it accepts.

A limit (``openai:gpt-4o``: 500 requests and 150,000 tokens a minute) is a pair of token buckets
kept by whoever every process of a journal shares: the DuckDB owner (in memory, ``Buckets``), a
PostgreSQL table (one row per limit, updated under its row lock), or a ``MemoryJournal``. A
client asks to *take* capacity for one call; the answer is ``0`` (taken) or the seconds to
sleep before asking again, so nobody busy-loops and nothing is reserved while anyone waits: a
process killed while waiting holds nothing, and one killed after taking only spent what a call
would have (the bucket refills with time whatever happens to it).

Each bucket holds at most a tenth of a minute's allowance (``burst``) and refills with the rest,
so any 60 seconds see at most the limit: ``burst + (limit - burst) = limit``. A call that needs
more tokens than a full bucket holds is let through when the bucket is full and leaves it in
debt, which later calls wait out. ``adjust`` corrects a call's estimate from the usage its
response reported; ``block`` empties the bucket until a provider's ``Retry-After`` has passed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from letitloop.errors import ConfigError

MAX_NAME = 200  # characters of a limit's name
MAX_RATE = 10**9  # requests or tokens a minute
MAX_TOKENS = 2**30  # tokens one call may take or correct by
MAX_BLOCK = 3600.0  # seconds one Retry-After may stop a limit for
MAX_BUCKETS = 10_000  # limits one owner keeps; the idle ones go first
_NAME = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,200}$")


def check_name(name: object) -> str:
    """A limit's name, refused unless it is short, printable and plain (it reaches logs, SQL
    parameters and the owner's memory)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(
            f"a limit's name must be 1 to {MAX_NAME} letters, digits or _ . : / @ + -, "
            f"got {name!r}"[:300],
            fix='name it after the provider and model, e.g. "openai:gpt-4o"',
        )
    return name


def check_rate(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RATE:
        raise ConfigError(
            f"{what} must be a whole number from 1 to {MAX_RATE:,} a minute, got {value!r}"[:300],
            fix="e.g. Limit('openai:gpt-4o', rpm=500, tpm=150_000)",
        )
    return value


def check_tokens(value: object, what: str = "tokens", signed: bool = False) -> int:
    low = -MAX_TOKENS if signed else 0
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_TOKENS:
        raise ConfigError(
            f"{what} must be a whole number of tokens from {low:,} to {MAX_TOKENS:,}, "
            f"got {value!r}"[:300],
            fix="pass the call's expected tokens, e.g. estimate_tokens=1200",
        )
    return value


def check_seconds(value: object) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0 <= value <= MAX_BLOCK:  # type: ignore[operator]
        raise ConfigError(
            f"a Retry-After must be from 0 to {MAX_BLOCK:g} seconds, got {value!r}"[:300],
            fix="pass the seconds the provider's Retry-After header gave",
        )
    return float(value)  # type: ignore[arg-type]


def _shape(limit: int) -> tuple[float, float]:
    """(capacity, refill per second) of a bucket for ``limit`` a minute: see the module's note."""
    burst = max(1, limit // 10)
    rest = limit - burst if limit > burst else limit
    return float(burst), rest / 60.0


@dataclass
class Bucket:
    """One limit's state: request and token levels at time ``at``, and a block's end."""

    rpm: int | None
    tpm: int | None
    req: float
    tok: float
    at: float
    blocked: float = 0.0

    @classmethod
    def fresh(cls, rpm: int | None, tpm: int | None, now: float) -> Bucket:
        req = _shape(rpm)[0] if rpm else 0.0
        tok = _shape(tpm)[0] if tpm else 0.0
        return cls(rpm, tpm, req, tok, now)

    def refill(self, now: float, rpm: int | None, tpm: int | None) -> None:
        """Bring the levels to ``now`` (the limits may have changed: the latest declaration
        counts, so a raised limit takes effect without restarting anything)."""
        elapsed = max(0.0, now - self.at)
        self.rpm, self.tpm, self.at = rpm, tpm, max(self.at, now)
        if rpm:
            cap, rate = _shape(rpm)
            self.req = min(cap, self.req + elapsed * rate)
        if tpm:
            cap, rate = _shape(tpm)
            self.tok = min(cap, self.tok + elapsed * rate)

    def take(self, now: float, tokens: int) -> float:
        """Take one request and ``tokens`` now (return 0), or return the seconds until it can."""
        waits = [self.blocked - now]
        if self.rpm:
            waits.append((1.0 - self.req) / _shape(self.rpm)[1])
        if self.tpm and tokens:
            cap, rate = _shape(self.tpm)
            waits.append((min(float(tokens), cap) - self.tok) / rate)
        wait = max(waits)
        if wait > 1e-3:  # within a millisecond is now: a sleeper woken on time never re-asks
            return wait
        if self.rpm:
            self.req -= 1.0
        if self.tpm:
            self.tok -= tokens
        return 0.0

    def adjust(self, tokens: int) -> None:
        """Count ``tokens`` more (or, negative, fewer) than a call took: its real usage."""
        if self.tpm:
            self.tok = min(_shape(self.tpm)[0], self.tok - tokens)

    def block(self, now: float, seconds: float) -> None:
        """A provider said 429 with ``Retry-After: seconds``: nobody calls before that, and the
        bucket starts empty after it (the provider counted more than we did)."""
        self.blocked = max(self.blocked, now + seconds)
        self.req = min(self.req, 0.0)
        self.tok = min(self.tok, 0.0)

    def idle_full(self) -> bool:
        full_req = not self.rpm or self.req >= _shape(self.rpm)[0]
        full_tok = not self.tpm or self.tok >= _shape(self.tpm)[0]
        return full_req and full_tok


class Buckets:
    """The buckets of one journal kept in one process (the DuckDB owner, a MemoryJournal)."""

    def __init__(self, limit: int = MAX_BUCKETS) -> None:
        self.buckets: dict[str, Bucket] = {}
        self.limit = limit

    def _get(self, name: str, rpm: int | None, tpm: int | None, now: float) -> Bucket:
        bucket = self.buckets.get(name)
        if bucket is None:
            if len(self.buckets) >= self.limit:
                self._evict(now)
            bucket = self.buckets[name] = Bucket.fresh(rpm, tpm, now)
        bucket.refill(now, rpm, tpm)
        return bucket

    def _evict(self, now: float) -> None:
        for name, bucket in list(self.buckets.items()):
            bucket.refill(now, bucket.rpm, bucket.tpm)
            if bucket.idle_full() and bucket.blocked <= now:
                del self.buckets[name]  # a full bucket is what a fresh one would be
        if len(self.buckets) >= self.limit:
            raise ConfigError(
                f"this journal already keeps {self.limit:,} rate limits in use",
                fix="declare limits per provider and model, not per call",
            )

    def take(self, name: str, rpm: int | None, tpm: int | None, tokens: int, now: float) -> float:
        check_name(name)
        rpm, tpm = check_rate(rpm, "rpm"), check_rate(tpm, "tpm")
        if rpm is None and tpm is None:
            raise ConfigError(f"limit {name!r} has neither rpm nor tpm", fix="give rpm= or tpm=")
        tokens = check_tokens(tokens)  # before anything is kept
        return self._get(name, rpm, tpm, now).take(now, tokens)

    def adjust(self, name: str, tokens: int, now: float) -> None:
        bucket = self.buckets.get(check_name(name))
        if bucket is not None:
            bucket.refill(now, bucket.rpm, bucket.tpm)
            bucket.adjust(check_tokens(tokens, signed=True))

    def block(self, name: str, seconds: float, now: float) -> None:
        bucket = self.buckets.get(check_name(name))
        if bucket is not None:
            bucket.refill(now, bucket.rpm, bucket.tpm)
            bucket.block(now, check_seconds(seconds))

    def snapshot(self, now: float) -> list[dict[str, Any]]:
        """Every bucket's levels now (``lil limits``)."""
        out: list[dict[str, Any]] = []
        for name, b in sorted(self.buckets.items()):
            b.refill(now, b.rpm, b.tpm)
            out.append(
                {"name": name, "rpm": b.rpm, "tpm": b.tpm, "requests": round(b.req, 2)}
                | {"tokens": round(b.tok, 1), "blocked_for": round(max(0.0, b.blocked - now), 2)}
            )
        return out
