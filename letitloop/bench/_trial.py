"""One trial: a run of a scenario on a framework, started, faulted, restarted and finished.

The worker is a process of the framework's own interpreter in a session of its own. For each
fault of the trial the harness waits for its point (counted in the worker's requests to the
counter server), injects it, and starts the worker again the way the framework resumes (the
workers know how: call the workflow again with the same id). A worker that stops for a person
(exit 3, having posted the framework's error and fix) gets one: the harness runs the command
the fix names, deciding an effect in doubt by asking the counter server whether it happened, as
a person would look at the provider's dashboard. Every wait is bounded.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from letitloop.bench._faults import Fault, MemoryCgroup, signal_worker
from letitloop.bench._server import Arm, CounterServer, RunLog

EXIT_PERSON = 3  # a worker's exit code: the run stopped and waits for a person
COMMAND = re.compile(r"`(lil [^`]+)`")


@dataclass
class Launch:
    """How to start a worker: its command, environment, folder and stderr file."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    stderr: Path
    lil_env: dict[str, str] = field(default_factory=dict)  # for a person's `lil` commands


@dataclass
class Injected:
    """A fault as it happened: what, where (k), when, and what the worker did."""

    fault: Fault
    k: int
    at: float  # monotonic time of the injection
    restarted: float | None = None  # when the worker started again (or the server came back)
    landed: bool = True  # False when the run finished before the point
    exit: int | None = None
    person: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""


@dataclass
class TrialResult:
    run_id: str
    injected: list[Injected]
    spawns: list[tuple[int, float]]  # (pid, start time)
    person: list[dict[str, Any]]
    errors: list[str]
    finished: bool
    wall_s: float


class Trial:
    """Runs one trial (see the module docstring)."""

    def __init__(
        self,
        server: CounterServer,
        log: RunLog,
        run_id: str,
        launch: Launch,
        baseline: dict[str, Any],
        cgroup: MemoryCgroup | None,
        pg_restart: Callable[[], None] | None,
        timeout_s: float,
    ) -> None:
        self.server, self.log, self.run_id = server, log, run_id
        self.launch = launch
        self.expected = max(1, int(baseline.get("requests", 1)))
        self.planned = {
            "call": int(baseline.get("calls", 1)),
            "effect": int(baseline.get("effects", 0)),
        }
        # the acts a clean run needs (an approval): not caused by a fault
        self.expected_acts: Counter[str] = Counter(a["what"] for a in baseline.get("person", []))
        self.acted: Counter[str] = Counter()
        self.cgroup = cgroup
        self.pg_restart = pg_restart
        self.deadline = time.monotonic() + timeout_s
        self.spawns: list[tuple[int, float]] = []
        self.person: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None

    # -- processes ------------------------------------------------------------------------------

    def spawn(self) -> subprocess.Popen[bytes]:
        with self.launch.stderr.open("ab") as err:
            proc = subprocess.Popen(
                self.launch.argv,
                env=self.launch.env,
                cwd=self.launch.cwd,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                start_new_session=True,
            )
        if self.cgroup is not None:
            self.cgroup.add(proc.pid)
        self.spawns.append((proc.pid, time.monotonic()))
        self.proc = proc
        return proc

    def wait_exit(self, proc: subprocess.Popen[bytes]) -> int:
        left = max(1.0, self.deadline - time.monotonic())
        try:
            return proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            self.errors.append(f"worker {proc.pid} did not finish in time: killed")
            signal_worker(proc.pid, "sigkill", lambda: False)
            return proc.wait(30)

    def end(self) -> None:
        """Whatever is left of the last worker's process group goes (never other processes)."""
        if self.proc is not None:
            signal_worker(self.proc.pid, "sigkill", lambda: False)
            if self.proc.poll() is None:
                self.proc.wait(30)

    # -- one fault -------------------------------------------------------------------------------

    def due(self) -> int:
        """Requests the run still has to make: the clean run's count less the keys done."""
        done = {e["key"] for e in self.log.snapshot() if e["t_resp"] is not None}
        return max(1, self.expected - len(done))

    def inject(self, fault: Fault, proc: subprocess.Popen[bytes]) -> Injected | None:
        """Wait for the fault's point and inject it; None when the worker finished first."""
        pid = proc.pid
        if fault.kind in ("effect", "oom"):
            what = "effect" if fault.kind == "effect" else "call"
            total = self._remaining(what)
            if total == 0:
                return None
            k = 1 + int(fault.u * total)
            arm = Arm(what, k, pid, balloon=fault.kind == "oom")
            if fault.kind == "oom" and self.cgroup is not None:
                arm.before_reply = self.cgroup.squeeze
            self.log.arm = arm
            try:
                while not arm.hit.wait(0.05):
                    if proc.poll() is not None or time.monotonic() > self.deadline:
                        return None
                at = time.monotonic()
                if fault.kind == "effect":
                    signal_worker(pid, "sigkill", lambda: proc.poll() is None)
                else:
                    self._wait_gone(proc, 60)
            finally:
                arm.release.set()
                self.log.arm = None
                if fault.kind == "oom" and self.cgroup is not None:
                    self.cgroup.limit(None)  # the next process starts without the squeeze
            return Injected(fault, k, at)
        k = 1 + int(fault.u * self.due())
        while self.log.count(pid) < k:
            if proc.poll() is not None or time.monotonic() > self.deadline:
                return None
            self.log.wait_count(pid, k, 0.05)
        time.sleep(fault.delay_ms / 1000)
        if proc.poll() is not None:
            return None
        at = time.monotonic()
        if fault.kind == "pg-restart":
            assert self.pg_restart is not None
            self.pg_restart()
            return Injected(fault, k, at, restarted=time.monotonic())
        signal_worker(pid, fault.kind, lambda: proc.poll() is None)
        return Injected(fault, k, at)

    def _remaining(self, what: str) -> int:
        kind = "effect" if what == "effect" else "call"
        done = {e["key"] for e in self.log.snapshot() if e["kind"] == kind and e["t_resp"]}
        planned = self.planned.get(kind, 0)
        return max(0, planned - len(done)) if kind == "effect" else max(1, planned - len(done))

    def _wait_gone(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.errors.append("the OOM balloon did not end the worker: SIGKILL")
            signal_worker(proc.pid, "sigkill", lambda: False)
            proc.wait(30)

    # -- a person --------------------------------------------------------------------------------

    def act(self, stopped: dict[str, Any]) -> dict[str, Any]:
        """Do what the framework's message told the person to do; what was done."""
        fix = str(stopped.get("fix", ""))
        found = COMMAND.findall(fix)
        act: dict[str, Any] = {"error": stopped.get("error"), "told": found[0] if found else fix}
        if not found:
            act.update(done="nothing: the message names no command", what="", expected=False)
            self.person.append(act)
            return act
        argv = shlex.split(found[0])
        act["what"] = " ".join(argv[1:3])
        self.acted[act["what"]] += 1
        act["expected"] = self.acted[act["what"]] <= self.expected_acts[act["what"]]
        if argv[1:3] == ["effects", "resolve"]:
            name = argv[4] if len(argv) > 4 else ""
            happened = any(
                e["kind"] == "effect" and _detail_name(e) == name for e in self.log.snapshot()
            )
            argv = [a for a in argv if a not in ("--done", "--redo")]
            argv.append("--done" if happened else "--redo")
        cmd = [self.launch.argv[0], "-m", "letitloop", *argv[1:]]
        env = {**self.launch.env, **self.launch.lil_env}
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        act["ran"] = shlex.join(["lil", *argv[1:]])
        act["exit"] = done.returncode
        if done.returncode != 0:
            self.errors.append(f"{act['ran']} failed: {done.stderr.strip()[-300:]}")
        self.person.append(act)
        return act

    # -- the trial -------------------------------------------------------------------------------

    def run(self, faults: list[Fault]) -> TrialResult:
        started = time.monotonic()
        injected: list[Injected] = []
        pending = list(faults)
        finished = False
        crashes = 0
        try:
            while time.monotonic() < self.deadline:
                proc = self.spawn()
                if injected and injected[-1].restarted is None:
                    injected[-1].restarted = self.spawns[-1][1]
                hit = self.inject(pending[0], proc) if pending else None
                if hit is not None:
                    pending.pop(0)
                    injected.append(hit)
                rc = self.wait_exit(proc)
                if hit is not None:
                    hit.exit = rc
                    if hit.fault.kind != "pg-restart" or rc != 0:
                        if hit.fault.kind == "pg-restart":
                            hit.restarted = None  # the worker died with the server: restart
                        continue
                if rc == 0 and self.log.answer is not None:
                    finished = True  # any fault still pending missed: the run ended first
                    break
                stopped = self.log.stopped
                if rc == EXIT_PERSON and stopped is not None:
                    self.log.stopped = None
                    act = self.act(stopped)
                    if act.get("exit", 0) != 0 or "ran" not in act:
                        break  # the person could not do what they were told: the run stays
                    if injected and not act["expected"]:
                        injected[-1].person.append(act)
                    continue
                crashes += 1
                self.errors.append(f"worker exited {rc} with no answer: {self._tail()}")
                if crashes >= 3:
                    break
        finally:
            self.end()
        return TrialResult(
            self.run_id,
            injected,
            self.spawns,
            self.person,
            self.errors,
            finished,
            time.monotonic() - started,
        )

    def _tail(self) -> str:
        try:
            text = self.launch.stderr.read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return " | ".join(lines[-3:])[-400:]


def _detail_name(event: dict[str, Any]) -> str:
    detail = json.loads(event["detail"])
    return f"{detail.get('kind')}-{detail.get('to')}"
