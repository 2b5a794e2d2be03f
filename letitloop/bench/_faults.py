"""The faults the harness injects, drawn from the seed, and the means to inject them.

``sigkill``    SIGKILL at the k-th request the worker makes after its (re)start, plus d ms
``effect``     SIGKILL inside a side effect: the server applied it, the worker never hears so
``sigterm``    SIGTERM (a spot eviction's notice), then SIGKILL after the grace period
``oom``        the kernel's OOM killer: the worker is in a memory cgroup whose limit is set just
               above its use, and a model reply tells it to allocate (skipped, with the reason,
               where no memory cgroup can be made)
``pg-restart`` PostgreSQL restarted as by a power cut (``pg_ctl restart -m immediate``), for the
               frameworks whose journal is PostgreSQL; the worker is not signalled

Every draw comes from one ``random.Random(seed)`` per framework and scenario, in a fixed order,
and each fault is printed with its kind, k and d, so a row replays with the same seed.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

KINDS = ("sigkill", "effect", "sigterm", "oom", "pg-restart")
GRACE_S = 1.0  # between SIGTERM and SIGKILL (a spot VM gets 30-120 s; the point is the notice)


@dataclass(frozen=True)
class Fault:
    """One fault to inject: its kind and where (``u`` picks k among the requests still due)."""

    kind: str
    u: float  # in [0, 1): k = 1 + floor(u * requests still due)
    delay_ms: int  # after the k-th request (sigkill, sigterm, pg-restart)

    def describe(self, k: int) -> str:
        if self.kind == "effect":
            return f"effect #{k}"
        if self.kind == "oom":
            return f"oom at call #{k}"
        return f"{self.kind} at request #{k} + {self.delay_ms} ms"


def draw(
    rng: random.Random, kinds: list[str], count: int, latency_ms: int, weights: dict[str, int]
) -> list[Fault]:
    """``count`` faults of the applicable ``kinds``, weighted."""
    pool = [k for k in kinds for _ in range(weights.get(k, 1))]
    out = []
    for _ in range(count):
        kind = rng.choice(pool)
        out.append(Fault(kind, rng.random(), rng.randint(0, max(1, int(latency_ms * 1.5)))))
    return out


WEIGHTS = {"sigkill": 5, "effect": 2, "sigterm": 2, "oom": 2, "pg-restart": 2}


def signal_worker(pid: int, kind: str, alive: object) -> None:
    """Send ``kind``'s signal(s) to the worker's process group (``alive()`` says if it lives)."""
    if kind == "sigterm":
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and alive():  # type: ignore[operator]
            time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


class MemoryCgroup:
    """A memory cgroup (v2, else v1) under ours, for OOM kills; ``None`` from ``make`` where the
    machine allows none (``why`` says why)."""

    why = ""

    def __init__(self, path: Path, v2: bool) -> None:
        self.path = path
        self.v2 = v2

    @classmethod
    def make(cls, name: str) -> MemoryCgroup | None:
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError as exc:
            cls.why = f"/proc/self/cgroup cannot be read ({exc})"
            return None
        for line in lines:
            _, controllers, rel = line.split(":", 2)
            if "memory" in controllers.split(","):
                base, v2 = Path("/sys/fs/cgroup/memory") / rel.lstrip("/"), False
                break
        else:
            rel = next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), "")
            base, v2 = Path("/sys/fs/cgroup") / rel.lstrip("/"), True
            if (
                not (base / "cgroup.controllers").exists()
                or "memory" not in (base / "cgroup.controllers").read_text()
            ):
                cls.why = "no memory cgroup controller is available to this process"
                return None
        path = base / name
        try:
            path.mkdir(exist_ok=True)
            group = cls(path, v2)
            group.limit(None)
        except OSError as exc:
            cls.why = f"cannot make a memory cgroup under {base} ({exc.strerror or exc})"
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return group

    def limit(self, size: int | None) -> None:
        if self.v2:
            (self.path / "memory.max").write_text("max" if size is None else str(size))
        else:
            (self.path / "memory.limit_in_bytes").write_text("-1" if size is None else str(size))

    def usage(self) -> int:
        name = "memory.current" if self.v2 else "memory.usage_in_bytes"
        return int((self.path / name).read_text().split()[0])

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def squeeze(self) -> None:
        """Set the limit just above what the group uses now (the balloon then hits it)."""
        self.limit(self.usage() + (64 << 20))

    def remove(self) -> None:
        """Move any process left back to the parent, then remove the group."""
        with contextlib.suppress(OSError):
            for pid in (self.path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    (self.path.parent / "cgroup.procs").write_text(pid)
        with contextlib.suppress(OSError):
            self.limit(None)
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
