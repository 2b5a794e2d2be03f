"""Restarting crashed processes: the policy, and the loop shared by `lil watch` and `@supervise`.

A crash is a non-zero exit or a death by signal (SIGKILL and the OOM killer included). After one,
the child starts again after an exponential backoff with jitter. Crashes that come soon after a
start (before ``healthy_after`` seconds) count towards a circuit breaker: more than
``max_restarts`` of them in a row and the supervisor stops and says why, instead of looping. A
child that ran long enough is healthy, and the count starts over.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from letitloop.errors import ConfigError


@dataclass(frozen=True)
class RestartPolicy:
    """How a supervisor restarts a crashed child (used by ``lil watch`` and ``@supervise``).

    Attributes:
        max_restarts: crashes in a row (each before ``healthy_after``) tolerated before giving up.
        backoff: seconds before the first restart; doubled after each further crash in a row.
        max_backoff: the longest wait between restarts.
        healthy_after: seconds after which a running child counts as healthy (resets the count).
        no_restart: exit codes that mean "stopped on purpose, do not restart" (0 always does).
    """

    max_restarts: int = 10
    backoff: float = 1.0
    max_backoff: float = 60.0
    healthy_after: float = 30.0
    no_restart: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        numbers = (self.backoff, self.max_backoff, self.healthy_after)
        if self.max_restarts < 0 or any(n < 0 for n in numbers):
            raise ConfigError(
                "max_restarts, backoff, max_backoff and healthy_after must be >= 0",
                fix="e.g. max_restarts=5, backoff=1.0, max_backoff=60, healthy_after=30",
            )

    def delay(self, crashes_in_a_row: int) -> float:
        """The wait before the next start: exponential, capped, with jitter (50-100%)."""
        base = min(self.max_backoff, self.backoff * 2.0 ** max(0, crashes_in_a_row - 1))
        return float(base * random.uniform(0.5, 1.0))


def describe_exit(code: int) -> str:
    """``exit 3``, or ``killed by SIGKILL`` for a negative Popen return code."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def shell_code(code: int) -> int:
    """A Popen return code as a shell would report it (128 + signal for a death by signal)."""
    return 128 - code if code < 0 else code


class Supervisor:
    """Start a child, wait for it, and restart it after crashes as the policy says.

    ``start()`` returns a new child process. ``on_crash(child, runtime, attempt)`` is called for
    each crash that will be retried (to journal it); ``say`` prints progress. ``stop(sig)``
    (from a signal handler or another thread) forwards the signal and ends supervision.
    """

    def __init__(
        self,
        policy: RestartPolicy,
        start: Callable[[], subprocess.Popen[bytes]],
        what: str,
        say: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr, flush=True),
        on_crash: Callable[[subprocess.Popen[bytes], str, int], None] | None = None,
        is_crash: Callable[[int], bool] | None = None,
    ) -> None:
        self.policy = policy
        self.start = start
        self.what = what
        self.say = say
        self.on_crash = on_crash
        self.is_crash = is_crash or (lambda code: code != 0 and code not in policy.no_restart)
        self.child: subprocess.Popen[bytes] | None = None
        self.stopping = threading.Event()
        self.tripped = False
        self.restarts = 0

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop supervising; pass ``sig`` to the child (a second stop kills it)."""
        child = self.child
        again = self.stopping.is_set()
        self.stopping.set()
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGKILL if again else sig)

    def run(self) -> int:
        """Supervise until the child succeeds, stops on purpose or the breaker trips; return the
        last child's return code (negative for a death by signal, as Popen reports it)."""
        in_a_row = 0
        while True:
            started = time.monotonic()
            self.child = child = self.start()
            code = child.wait()
            runtime = time.monotonic() - started
            if self.stopping.is_set() or not self.is_crash(code):
                return code
            in_a_row = 1 if runtime >= self.policy.healthy_after else in_a_row + 1
            why = f"{self.what} {describe_exit(code)} after {runtime:.1f}s"
            if in_a_row > self.policy.max_restarts:
                self.tripped = True
                self.say(
                    f"{why}; giving up: it crashed {in_a_row} times in a row, each within "
                    f"{self.policy.healthy_after:g}s of starting (max_restarts="
                    f"{self.policy.max_restarts}). Fix the crash, then start it again."
                )
                return code
            self.restarts += 1
            wait = self.policy.delay(in_a_row)
            self.say(f"{why}; restarting in {wait:.1f}s (restart {self.restarts})")
            if self.on_crash is not None:
                self.on_crash(child, describe_exit(code), self.restarts)
            if self.stopping.wait(wait):
                return code
