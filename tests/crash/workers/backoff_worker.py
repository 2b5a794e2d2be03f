"""A step that fails once with a transient error and backs off 2 s; test_backoff kills it
while it waits. Prints "ATTEMPT <n> <unix time>" when each attempt starts, then RESULT."""

import sys
import time

from letitloop import current_step, durable, open_journal, step
from letitloop.kernel._policy import Retry


class RateLimited(Exception):
    pass


def call() -> str:
    n = current_step().attempt
    print(f"ATTEMPT {n} {time.time():.6f}", flush=True)
    if n == 1:
        raise RateLimited("429: slow down")
    return "answer"


@durable(journal=sys.argv[1], run_id="backoff", name="backoff")
def flow() -> str:
    return step("call", call, retry=Retry(attempts=3, backoff=2.0, jitter=False))


open_journal(sys.argv[1])
print("READY", flush=True)
print(f"RESULT {flow()}", flush=True)
