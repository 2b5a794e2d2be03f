"""Durable workflows the language-server tests run in subprocesses (``python flows.py WHAT
[ARG]``, journal from $LIL_JOURNAL) and open in the editor. Copied to a temporary directory as
``flows.py``, so their workflow names are ``flows.<function>``."""

import os
import sys

from letitloop import approval, atomic_marker, durable, step


def fetch(x):
    return {"user": x, "note": "hello from the journal"}


def divide(x):
    return 10 / x


@durable
def pipeline(x: int):
    step("fetch_user", fetch, x)
    with atomic_marker("notify") as go:
        if go:
            pass
    return step("divide", divide, x)


@durable
def reordered():
    step("first", fetch, 1)
    step("second", fetch, 2)
    os._exit(3)


@durable
def in_doubt():
    step("prepare", fetch, 1)
    with atomic_marker("charge_card") as go:
        if go:
            os._exit(4)


@durable
def live(x: int):
    step("load", fetch, x)
    return step("compute", divide, x)


@durable
def busy(stop_file: str):
    """Journal steps until ``stop_file`` exists (at most 20,000)."""
    i = 0
    while not os.path.exists(stop_file) and i < 20_000:
        step("tick", fetch, i)
        i += 1
    return i


@durable
def release():
    step("build", fetch, 1)
    decision = approval("ship", {"version": "1.2"}, wait=False)
    return step("announce", fetch, decision.approved)


if __name__ == "__main__":
    what, args = sys.argv[1], [int(a) if a.isdigit() else a for a in sys.argv[2:]]
    try:
        print(globals()[what](*args))
    except ZeroDivisionError:
        print("failed")
    except Exception as exc:  # Suspended: the run waits for a decision
        print(type(exc).__name__)
