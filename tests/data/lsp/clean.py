"""Durable code that is replay-safe: nothing to report."""

import os
import random
import time

from letitloop import atomic_marker, durable, durable_async, async_step, step


def fetch(user_id):
    return {"id": user_id}


def stamp():
    return time.time()


@durable(name="clean.sync", run_id="r1")
def sync_customer(user_id: int) -> str:
    user = step("fetch_user", fetch, user_id)
    when = step("when", stamp)
    choice = step("choice", lambda: random.choice([1, 2]))
    with atomic_marker("slack") as should_execute:
        if should_execute:
            os.remove("/tmp/x")
    return f"{user} {when} {choice}"


@durable_async
async def fan_out(n: int) -> list[int]:
    async def square(i):
        return time.time() * i

    return [await async_step("sq", square, i) for i in range(n)]


def plain():
    return time.time(), os.environ.get("HOME")
