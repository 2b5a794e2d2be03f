"""``run``: run a command, let its output stream as usual, and sign what really happened.

Before the command starts, the signing keys are loaded (so a missing key fails in a second,
not after the test suite), the git facts are taken and the protected signatures are read: the
receipt describes the code as it was when the command began. The command's stdout and stderr
are copied through to ours while their SHA-256 is computed. For pytest, a JUnit report is
requested through ``PYTEST_ADDOPTS`` (which also reaches pytest started by a shell line, tox or
make) into a private temporary directory, and its counts are recorded. The signing keys are
removed from the command's environment: the code under test never sees them.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from letitloop.receipts import _git, _junit, _keys, _signatures
from letitloop.receipts._canonical import FORMAT, seal
from letitloop.receipts._errors import ReceiptError
from letitloop.receipts._model import Receipt

CI_ENV = (
    "GITHUB_REPOSITORY",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
    "GITHUB_WORKFLOW",
    "GITHUB_EVENT_NAME",
    "GITHUB_REF",
    "GITHUB_SHA",
    "RUNNER_OS",
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class _Tee(threading.Thread):
    """Copies one pipe to one of our streams, hashing and counting the bytes."""

    def __init__(self, pipe: IO[bytes], sink: IO[Any] | None) -> None:
        super().__init__(daemon=True)
        self.pipe, self.sink = pipe, sink
        self.hash = hashlib.sha256()
        self.size = 0

    def run(self) -> None:
        fd = self.pipe.fileno()
        raw = getattr(self.sink, "buffer", None)
        while chunk := os.read(fd, 65536):
            self.hash.update(chunk)
            self.size += len(chunk)
            if self.sink is None:
                continue
            if raw is not None:
                raw.write(chunk)
                raw.flush()
            else:
                self.sink.write(chunk.decode(errors="replace"))
                self.sink.flush()
        self.pipe.close()

    def summary(self) -> dict[str, Any]:
        return {"sha256": "sha256:" + self.hash.hexdigest(), "bytes": self.size}


def execute(
    command: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str],
    stream: bool,
) -> tuple[int, dict[str, Any]]:
    """Run ``command``, copying its output through; its exit code and output digests."""
    if stream:  # text already written by us must come before the command's bytes
        sys.stdout.flush()
        sys.stderr.flush()
    try:
        proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except (FileNotFoundError, PermissionError) as exc:
        raise ReceiptError(
            f"cannot run {shlex.join(command)}: {exc.strerror or exc}",
            fix="check the command after `--` (is it installed and on PATH?)",
        ) from None
    assert proc.stdout is not None and proc.stderr is not None
    out = _Tee(proc.stdout, sys.stdout if stream else None)
    err = _Tee(proc.stderr, sys.stderr if stream else None)
    out.start()
    err.start()
    try:
        code = proc.wait()
    except BaseException:
        proc.terminate()
        proc.wait()
        raise
    finally:
        out.join()
        err.join()
    return code, {"stdout": out.summary(), "stderr": err.summary()}


def child_env(base: Mapping[str, str], junit_file: str | None) -> dict[str, str]:
    """The command's environment: ours without the signing keys, plus the JUnit request."""
    env = {k: v for k, v in base.items() if k not in _keys.SECRET_ENV}
    if junit_file is not None:
        extra = f"--junitxml={junit_file}"
        env["PYTEST_ADDOPTS"] = (
            f"{env['PYTEST_ADDOPTS']} {extra}".strip() if env.get("PYTEST_ADDOPTS") else extra
        )
    return env


def environment() -> dict[str, Any]:
    """The interpreter and platform the receipt was made on."""
    from letitloop._version import __version__

    return {
        "python": {
            "implementation": platform.python_implementation(),
            "version": platform.python_version(),
            "executable": sys.executable,
        },
        "platform": platform.platform(),
        "machine": platform.machine(),
        "letitloop": __version__,
    }


def run(
    command: Sequence[str],
    *,
    out: str | os.PathLike[str] | None = None,
    protect: Sequence[str] = (),
    junit: str | os.PathLike[str] | None = None,
    key: str | bytes | None = None,
    key_file: str | os.PathLike[str] | None = None,
    signing_key: str | bytes | None = None,
    signing_key_file: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stream: bool = True,
) -> Receipt:
    """Run ``command`` in ``cwd`` and return its signed ``Receipt`` (also written to ``out``).

    ``protect`` lists ``PATH::QUALNAME`` entries (relative to the repository root) whose
    signatures are recorded, besides ``[tool.letitloop] protect``. ``junit`` names a JUnit
    report the command writes; for pytest one is requested automatically. Keys: ``key`` /
    ``key_file`` / ``$LIL_RECEIPT_KEY`` (HMAC-SHA256) and ``signing_key`` / ``signing_key_file``
    / ``$LIL_RECEIPT_SIGNING_KEY`` (Ed25519 PEM); at least one. The command's failure is
    recorded, not raised: check ``receipt.exit_code`` or ``verify`` the receipt.
    """
    command = [str(c) for c in command]
    if not command:
        raise ReceiptError("no command to run", fix="put the command after `--`")
    base_env = dict(os.environ if env is None else env)
    signers = _keys.signers(
        key=key,
        key_file=key_file,
        signing_key=signing_key,
        signing_key_file=signing_key_file,
        env=base_env,
    )
    workdir = Path(cwd or ".").resolve()
    root = _git.repo_root(workdir) or workdir
    config_protect, _ = _signatures.pyproject_at(root)
    specs = _signatures.normalize([*protect, *config_protect])
    protected = _signatures.read_protected(specs, root)
    git_facts = _git.facts(workdir)
    with tempfile.TemporaryDirectory(prefix="lil-receipt-") as tmp:
        junit_file: str | None = None
        requested: str | None = None
        if junit is not None:
            junit_file = str(Path(workdir, junit))
        elif _junit.mentions_pytest(command):
            given = _junit.pytest_junit_arg(command)
            if given is not None:
                junit_file = str(Path(workdir, given))
            else:
                junit_file = requested = str(Path(tmp, "junit.xml"))
        started, t0 = _now(), time.monotonic_ns()
        start_wall = time.time()
        code, output = execute(
            command, cwd=workdir, env=child_env(base_env, requested), stream=stream
        )
        duration_ms = (time.monotonic_ns() - t0) // 1_000_000
        ended = _now()
        tests = None
        if junit_file is not None:
            path = Path(junit_file)
            fresh = path.exists() and path.stat().st_mtime >= start_wall - 1
            try:
                tests = _junit.read_junit(path) if fresh else None
            except ReceiptError as exc:  # recorded, not raised: the run itself happened
                tests = {"source": "junit", "error": exc.message}
    cwd_rel = os.path.relpath(workdir, root) if workdir != root else "."
    payload: dict[str, Any] = {
        "format": FORMAT,
        "command": command,
        "cwd": Path(cwd_rel).as_posix(),
        "started_at": started,
        "ended_at": ended,
        "duration_ms": duration_ms,
        "exit_code": code,
        "output": output,
        "tests": tests,
        "git": git_facts,
        "protected": protected,
        "environment": environment(),
        "ci": {name: base_env[name] for name in CI_ENV if base_env.get(name)},
    }
    receipt = Receipt(seal(payload, signers))
    if out is not None:
        receipt.save(Path(workdir, out))
    return receipt
