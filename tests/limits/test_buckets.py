"""The bucket arithmetic, the owner's bounds on hostile limit requests, Retry-After, token
corrections and the visible wait (``lil runs show``, ``lil limits``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from letitloop import durable, step
from letitloop.errors import ConfigError, JournalError
from letitloop.journal._limits import Buckets
from letitloop.journal._memory import MemoryJournal
from letitloop.kernel._limits import Limit, resolve
from tests.helpers import Lil, child_env, wait_until


def test_a_minute_never_sees_more_than_the_limit() -> None:
    b = Buckets()
    grants = []
    t = 0.0
    while t < 180:  # three minutes of a client that asks again exactly when told
        wait = b.take("m", 60, None, 0, t)
        if wait == 0:
            grants.append(t)
        else:
            assert wait > 0.01  # told to sleep, never to spin
        t += wait or 0.001
    for start in grants:
        assert sum(start <= g < start + 60 for g in grants) <= 60
    assert len(grants) >= 6 + 0.9 * 170  # and the limit is used, not wasted


def test_tokens_are_taken_then_corrected_and_big_calls_leave_debt() -> None:
    b = Buckets()
    assert b.take("t", None, 600, 60, 0.0) == 0  # capacity 60 tokens, 9 a second
    assert b.take("t", None, 600, 10, 0.0) > 0  # empty
    b.adjust("t", -60, 0.0)  # the call used nothing: its tokens come back
    assert b.take("t", None, 600, 10, 0.0) == 0
    b.adjust("t", 500, 0.0)  # it used 500 more than estimated: debt
    assert b.take("t", None, 600, 1, 0.0) > 50
    b2 = Buckets()
    assert b2.take("big", None, 600, 5000, 0.0) == 0  # more than a full bucket: let through
    assert b2.take("big", None, 600, 1, 1.0) > 400  # and paid for


HOSTILE = [
    ("x" * 201, 1, None, 0),
    ("bad name", 1, None, 0),
    ("a\nb", 1, None, 0),
    ("ok", -1, None, 0),
    ("ok", 10**10, None, 0),
    ("ok", None, None, 0),
    ("ok", 1, None, 2**40),
    ("ok", 1, None, -5),
    ("ok", True, None, 0),
]


def test_the_owner_refuses_hostile_limit_requests(journal: Any) -> None:
    for name, rpm, tpm, tokens in HOSTILE:
        with pytest.raises((ConfigError, JournalError)):  # JournalError: refused by its shape
            journal.take_capacity(name, rpm, tpm, tokens)
    with pytest.raises((ConfigError, JournalError)):
        journal._call({"op": "limit", "act": "drain", "name": "ok"})
    assert journal.capacity() == []  # nothing was kept
    assert journal.take_capacity("fine", 60, None, 0) == 0  # and the owner serves on


def test_the_owner_keeps_a_bounded_number_of_limits() -> None:
    b = Buckets(limit=3)
    for i in range(3):
        b.take(f"l{i}", 60, None, 0, 0.0)
    b.take("l3", 60, None, 0, 100.0)  # the idle full ones make room
    for i in range(4, 6):
        b.take(f"l{i}", 60, None, 0, 100.0)
    with pytest.raises(ConfigError, match="already keeps 3"):
        b.take("l9", 60, None, 0, 100.0)  # all in use: refused, not grown


@dataclass
class Usage:
    prompt_tokens: int = 100
    completion_tokens: int = 50


@dataclass
class Response:
    """A provider-style response: its usage is what the call really cost."""

    usage: Usage
    model: str = "fake-1"


def reply() -> Response:
    return Response(Usage())


class TooMany(Exception):
    status_code = 429

    def __init__(self, after: str) -> None:
        super().__init__("rate limited")
        self.headers = {"retry-after": after}


def test_a_429_blocks_the_limit_for_its_retry_after_and_the_call_is_tried_again() -> None:
    journal = MemoryJournal()
    limit = Limit("test:429", rpm=6000)
    calls: list[float] = []

    def flaky() -> str:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise TooMany("0.4")
        return "ok"

    @durable(journal=journal, run_id="r429")
    def run() -> str:
        return step("call", flaky, limit=limit)

    assert run() == "ok"
    assert len(calls) == 2 and calls[1] - calls[0] >= 0.35
    # the journal holds one completed attempt: the 429 was absorbed by the limit
    detail = journal.get_run(journal.find_run("r429"))
    assert [a.status for a in detail.attempts] == ["completed"]


def test_limit_by_name_from_pyproject_and_limit_kw_of_the_function(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.letitloop.limits]\n"cfg:model" = { rpm = 500, tpm = 150000 }\n'
    )
    assert resolve("cfg:model", tmp_path) == Limit("cfg:model", rpm=500, tpm=150_000)
    with pytest.raises(ConfigError, match="no rate limit named"):
        resolve("nobody:declared", tmp_path)
    journal = MemoryJournal()

    def rows(limit: int) -> list[int]:
        return list(range(limit))

    @durable(journal=journal, run_id="kw")
    def run() -> list[int]:
        return step("rows", rows, limit=3)  # an int stays the function's own keyword

    assert run() == [0, 1, 2]


def test_usage_corrects_the_tokens_taken() -> None:
    journal = MemoryJournal()
    limit = Limit("test:tpm", tpm=6000)  # 600 tokens of capacity

    @durable(journal=journal, run_id="tpm")
    def run() -> None:
        step("call", reply, limit=limit, estimate_tokens=500)

    run()
    (bucket,) = journal.capacity()
    assert 440 <= bucket["tokens"] <= 460  # 600 - 500 taken + 350 given back


def test_a_waiting_step_shows_in_lil_runs_show_and_a_killed_waiter_holds_nothing(
    journal_path: Path,
) -> None:
    script = (
        "from letitloop import durable, step\n"
        "from letitloop.kernel._limits import Limit\n"
        "L = Limit('test:slow', rpm=1)\n"
        "@durable(run_id='slow')\n"
        "def slow():\n"
        "    for i in range(3):\n"
        "        step(f'call-{i}', int, str(i), limit=L)\n"
        "slow()\n"
    )
    env = child_env(journal_path)
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True)
    try:
        lil = Lil(env)

        def waiting() -> str | None:
            shown = lil.run("runs", "show", "slow").stdout
            return shown if "waiting for capacity" in shown else None

        shown = wait_until(waiting, 60, what="lil runs show to say the run waits", interval=0.2)
        assert "waiting for capacity of limit test:slow" in shown, shown
        assert "'call-1' at position 1" in shown
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        limits = lil.run("limits")
        assert "test:slow" in limits.stdout
        # the dead waiter took nothing: one request is spent (call-0), none is held for it
        from letitloop.journal.duckdb._client import open_journal

        (bucket,) = open_journal(journal_path).capacity()
        assert bucket["requests"] < 1  # the one spent refills at 1 a minute, whoever waits
        shown = lil.run("runs", "show", "slow").stdout
        assert "waiting for capacity" not in shown  # its process is gone: no longer running
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
