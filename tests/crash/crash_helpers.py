"""Shared plumbing for the crash tests: launching worker scripts, reading their output, killing
(whether a process lives and bounded waits are ``tests/helpers.py``'s).

Every wait here is bounded; every process is started by the test that uses it and is killed by
that test's ``finally`` through ``Worker.kill``/``kill_all``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.helpers import child_env

ROOT = str(Path(__file__).resolve().parents[2])
WORKERS = Path(__file__).resolve().parent / "workers"


def worker_env() -> dict[str, str]:
    """The environment of a worker: a test's child's (``tests/helpers.py``), unbuffered."""
    return child_env(PYTHONUNBUFFERED="1")


class Worker:
    """A worker subprocess whose stdout lines are collected by a thread as they arrive."""

    def __init__(self, script: str, *args: object, stderr_path: Path | None = None) -> None:
        self.stderr_path = stderr_path
        err = open(stderr_path, "ab") if stderr_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                [sys.executable, str(WORKERS / script), *map(str, args)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                env=worker_env(),
                cwd=ROOT,
            )
        finally:
            if stderr_path:
                err.close()  # type: ignore[union-attr]
        self.pid = self.proc.pid
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._eof = False
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._cond:
                self.lines.append(raw.decode(errors="replace").rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def wait_for(self, pred: Callable[[str], bool], timeout: float) -> str | None:
        """The first line matching ``pred``, waiting up to ``timeout`` s; None at EOF/timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                for line in self.lines[seen:]:
                    if pred(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if self._eof or left <= 0:
                    return None
                self._cond.wait(left)

    def wait_prefix(self, prefix: str, timeout: float) -> str | None:
        return self.wait_for(lambda line: line.startswith(prefix), timeout)

    def snapshot(self) -> list[str]:
        with self._cond:
            return list(self.lines)

    def finish(self, timeout: float) -> int:
        """Wait for the worker to exit on its own and for its output to be fully read."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"worker {self.pid} did not exit within {timeout} s; {self.diagnostics()}"
            ) from None
        self._thread.join(10)
        return rc

    def sigkill(self) -> bool:
        """SIGKILL the worker; True if it was still running when the signal was sent."""
        if self.proc.poll() is not None:
            return False
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
        self.proc.wait(10)
        self._thread.join(10)
        return self.proc.returncode == -signal.SIGKILL

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self._thread.join(5)

    def diagnostics(self) -> str:
        err = ""
        if self.stderr_path and self.stderr_path.exists():
            err = self.stderr_path.read_text(errors="replace")[-3000:]
        return f"rc={self.proc.returncode} stdout tail={self.snapshot()[-5:]!r} stderr tail:\n{err}"


def kill_all(workers: Iterable[Worker]) -> None:
    for w in workers:
        w.kill()


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# -- what workers/chaos_worker.py and workers/writer_worker.py compute, without any crash -------

N_STEPS = 30  # chaos_worker.py's steps
CHAOS_RUN = "chaos:chaos"  # name:run_id, as chaos_worker.py declares it
WRITER_STEPS = 200  # what the writer tests ask writer_worker.py for


def chaos_expected() -> int:
    """The final result of chaos_worker.py's workflow computed without any crash."""
    value = 17
    for i in range(N_STEPS):
        value = (value * 31 + i * 7 + 1) % 1_000_000_007
    return value


def writer_expected(wid: int) -> int:
    """writer_worker.py's result for writer ``wid`` over ``WRITER_STEPS`` steps."""
    acc = wid
    for i in range(WRITER_STEPS):
        acc = (acc * 7 + i + wid) % 1_000_003
    return acc


def parse_side_effects(path: Path) -> dict[int, list[tuple[int, int]]]:
    """chaos_worker.py's side-effect file: index -> [(pid, attempt), ...] in file order."""
    out: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for line in read_lines(path):
        index, token = line.split()
        pid, attempt = token.split(":")
        out[int(index)].append((int(pid), int(attempt)))
    return out


def result_of(w: Worker) -> int | None:
    """The RESULT a worker printed, if it did."""
    line = next((x for x in w.snapshot() if x.startswith("RESULT ")), None)
    return int(line.split()[1]) if line else None
