"""Every backend keeps buckets the same way: take, wait, correct, block, list, refuse."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from letitloop import Limit, async_step, durable, durable_async, step
from letitloop.errors import ConfigError, JournalError
from tests.helpers import wait_until


def test_take_wait_adjust_block_and_list(any_journal: Any) -> None:
    j = any_journal
    for _ in range(6):  # the burst of 60 rpm
        assert j.take_capacity("b:rpm", 60, None, 0) == 0
    wait = j.take_capacity("b:rpm", 60, None, 0)
    assert 0 < wait <= 60 / 54 + 0.01  # told how long to sleep: at most one refill
    assert j.take_capacity("b:tpm", None, 6000, 600) == 0  # a full bucket of tokens
    assert j.take_capacity("b:tpm", None, 6000, 100) > 0
    j.adjust_capacity("b:tpm", -600)  # the call used none of its estimate
    assert j.take_capacity("b:tpm", None, 6000, 100) == 0
    j.block_capacity("b:rpm", 30)

    def blocked() -> dict[str, Any] | None:
        listed = {b["name"]: b for b in j.capacity()}
        return listed if listed.get("b:rpm", {}).get("blocked_for", 0) > 20 else None

    # (the owner takes an unwaited block in its next round)
    listed = wait_until(blocked, 10, what=lambda: f"b:rpm blocked for 30 s: {j.capacity()}")
    assert listed["b:rpm"]["blocked_for"] > 20 and listed["b:rpm"]["rpm"] == 60
    assert j.take_capacity("b:rpm", 60, None, 0) > 20
    assert listed["b:tpm"]["tpm"] == 6000
    with pytest.raises((ConfigError, JournalError)):
        j.take_capacity("no spaces", 60, None, 0)
    with pytest.raises((ConfigError, JournalError)):
        j.take_capacity("b:x", 0, None, 0)
    assert j.notifications() == []


def test_durable_limit_applies_to_every_step_and_async_steps_wait_too(any_journal: Any) -> None:
    Limit("b:run", rpm=600)  # bursts of 60, then 9 a second
    any_journal.take_capacity("b:run", 600, None)
    any_journal.block_capacity("b:run", 0.5)  # a provider's Retry-After, seen by another client

    @durable(journal=any_journal, run_id="all", limit="b:run")
    def run() -> list[int]:
        return [step(f"s{i}", int, str(i)) for i in range(3)]

    t0 = time.monotonic()
    assert run() == [0, 1, 2]
    assert time.monotonic() - t0 >= 0.45  # every step of the run waited for the limit

    Limit("b:async", rpm=600)

    @durable_async(journal=any_journal, run_id="many")
    async def many() -> list[int]:
        calls = [async_step(f"a{i}", _double, i, limit="b:async") for i in range(62)]
        return list(await asyncio.gather(*calls))

    t0 = time.monotonic()
    assert asyncio.run(many()) == [2 * i for i in range(62)]
    assert time.monotonic() - t0 >= 0.15  # 60 at once, and the last two at 9 a second


async def _double(i: int) -> int:
    return 2 * i


def test_step_map_items_share_the_limit(any_journal: Any) -> None:
    from letitloop.distributed import ThreadExecutor

    limit = Limit("b:map", rpm=600)  # a burst of 60, then 9 a second

    @durable(journal=any_journal, run_id="mapped")
    def fan() -> list[int]:
        return step.map("sq", _square, range(64), on=ThreadExecutor(8), limit=limit)  # type: ignore[attr-defined, no-any-return]

    t0 = time.monotonic()
    assert fan() == [i * i for i in range(64)]
    assert time.monotonic() - t0 >= 0.3  # the last four waited for the limit
    (bucket,) = [b for b in any_journal.capacity() if b["name"] == "b:map"]
    assert bucket["requests"] < 30  # spent (it refills at 9 a second once the map is done)


def _square(i: int) -> int:
    return i * i
