"""Four processes share one 60 rpm limit through the DuckDB owner, measured by the provider.

A local HTTP server counts the requests; four real processes call it from steps with
``limit="test:shared-60"`` for 30 s. Together they stay within 60 a minute (and within the
burst-plus-refill bound in every 10 s window), one SIGKILLed while waiting takes nothing with
it (the others keep the full rate, and its run resumes and gets capacity at once).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import child_env, wait_until
from tests.limits.counting_server import Counter

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SECONDS = 30.0
BURST, RATE = 6, 54 / 60  # journal._limits: a tenth of the minute's allowance, then the rest


def _spawn(env: dict[str, str], name: str, url: str, steps: int = 60) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / "limit_flows.py"), name, url, str(steps)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


@pytest.fixture
def counter() -> Iterator[Counter]:
    c = Counter()
    yield c
    c.close()


def test_four_processes_share_60_rpm_and_a_killed_waiter_loses_nothing(
    journal_path: Path, counter: Counter
) -> None:
    journal = journal_path
    env = child_env(journal)
    procs = [_spawn(env, f"w{i}", counter.url) for i in range(4)]
    try:
        wait_until(
            counter.times, 60, what=lambda: "a worker to reach the server: " + _errors(procs)
        )
        start = counter.times()[0]
        time.sleep(max(0.0, start + 12 - time.monotonic()))
        victim = procs[0]  # nearly always waiting: four processes share 0.9 requests a second
        _kill(victim)
        killed_at = time.monotonic()
        time.sleep(max(0.0, start + SECONDS - time.monotonic()))
        for proc in procs[1:]:
            assert proc.poll() is None, "a worker stopped: " + _errors([proc])
            _kill(proc)
        end = time.monotonic()
    finally:
        for proc in procs:
            _kill(proc)

    times = [t for t in counter.times() if t <= end]
    span = end - start
    # together within the limit: any minute (the whole test) and any 10 s window
    assert counter.max_in_window(60) <= 60
    assert len(times) <= BURST + RATE * span + 2, (len(times), span)
    assert counter.max_in_window(10) <= BURST + RATE * 10 + 1
    # and they used it: four processes that did not share would each be allowed as much
    assert len(times) >= 0.7 * (BURST + RATE * span), (len(times), span)
    # the killed waiter held nothing: the other three kept the full rate after it died
    after = [t for t in times if killed_at + 2 <= t <= end]
    assert len(after) >= 0.7 * RATE * (end - killed_at - 2), (len(after), end - killed_at)

    # its run resumes where it was, and gets capacity at once (the bucket refilled meanwhile)
    from letitloop.journal import open_journal

    j = open_journal(str(journal))
    before = j.get_run(j.find_run("limits-w0"))
    done_before = sum(a.status == "completed" for a in before.attempts)
    hits_w0 = [p for _, p in counter.hits if p.startswith("/w0/")]
    assert done_before <= len(hits_w0) <= done_before + 1
    seen = len(counter.hits)
    again = _spawn(env, "w0", counter.url)
    try:
        wait_until(
            lambda: len(counter.hits) >= seen + 3,
            30,
            what=lambda: "three more calls: " + _errors([again]),
        )
        new = [p for _, p in counter.hits[seen:]]
        assert new[0] == f"/w0/{done_before}", new  # resumed at its first unfinished call
    finally:
        _kill(again)
    j.close()


def _errors(procs: list[subprocess.Popen[str]]) -> str:
    out = []
    for proc in procs:
        if proc.poll() is not None and proc.stderr is not None:
            out.append(proc.stderr.read()[-2000:])
    return "\n".join(out)
