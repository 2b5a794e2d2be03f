"""Run a cookbook example as its reader would: from its folder, with the commands its README gives.

Each test copies ``examples/NAME`` into a stand-in checkout under the test's temporary directory
(with ``.venv`` and ``.venvs`` linked to this checkout's), so the example's journal, its outputs
and any file it writes land there and never in the repository. Commands run with bash in the
example's folder, with the checkout's ``.venv/bin`` first on PATH, as after
``source .venv/bin/activate``; every command a test runs must appear in the README verbatim, so a
README that drifts from its example fails its test.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import lil_json, wait_until

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TIMEOUT = 180.0  # seconds for one command; generous, the machine may be loaded
# not copied: caches, journals, and what running an example writes (examples/.gitignore), so a
# checkout where someone ran the examples tests them as a fresh clone would
LEFT_BEHIND = (
    "*.pyc",
    "__pycache__",
    ".letitloop",
    ".ipynb_checkpoints",
    *(
        line.rstrip("/").rsplit("/", 1)[-1]
        for line in (EXAMPLES / ".gitignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ),
)


def run_it(readme: str) -> list[str]:
    """The commands of the README's "## Run it" section (``$ `` lines, comments dropped)."""
    section = readme.split("## Run it", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```console\n(.*?)```", section, re.S)
    lines = [line for block in blocks for line in block.splitlines() if line.startswith("$ ")]
    return [re.sub(r"\s{2,}#.*$", "", line[2:]).strip() for line in lines]


@dataclass
class Proc:
    """A command started in the background, its output going to files."""

    cmd: str
    popen: subprocess.Popen[bytes]
    out: Path
    err: Path

    def output(self) -> str:
        return self.out.read_text(errors="replace") + self.err.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = TIMEOUT) -> str:
        """Wait until ``text`` is in the command's output (stdout or stderr); the output."""

        def printed() -> str | None:
            seen = self.output()
            if text in seen:
                return seen
            assert self.popen.poll() is None, (
                f"{self.cmd!r} ended ({self.popen.returncode}): {seen[-4000:]}"
            )
            return None

        return wait_until(
            printed,
            timeout,
            what=lambda: f"{self.cmd!r} to print {text!r}: {self.output()[-4000:]}",
        )

    def kill(self) -> None:
        """SIGKILL the command and every process it started (its process group)."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(timeout=60)

    def finish(self, timeout: float = TIMEOUT) -> tuple[int, str, str]:
        """Wait for the command to end: its exit status, stdout and stderr."""
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.cmd!r} still ran after {timeout}s: {self.output()[-4000:]}"
            ) from None
        return self.popen.returncode, self.out.read_text(), self.err.read_text()


@dataclass
class Example:
    """One example's folder in a stand-in checkout, and the commands run in it."""

    name: str
    tmp: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)
    journals: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.checkout = self.tmp / "checkout"
        self.dir = self.checkout / "examples" / self.name
        shutil.copytree(EXAMPLES / self.name, self.dir, ignore=shutil.ignore_patterns(*LEFT_BEHIND))
        for venv in (".venv", ".venvs"):
            (self.checkout / venv).symlink_to(ROOT / venv)
        self.readme = (self.dir / "README.md").read_text()
        self.journal_path = self.dir / ".letitloop" / "journal.duckdb"
        self.journals.append(self.journal_path)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LIL_JOURNAL", "PG"))}
        venv_bin = self.checkout / ".venv" / "bin"
        self.env = {
            **env,
            "PYTHONPATH": str(ROOT),  # this checkout's letitloop, whatever .venv points at
            "PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
            "VIRTUAL_ENV": str(self.checkout / ".venv"),
            "PYTHONUNBUFFERED": "1",
            **self.extra_env,
        }
        self._n = 0

    def documented(self, cmd: str) -> None:
        """``cmd`` is in the README (a line break inside it reads as a space, as Markdown
        renders it)."""
        said = " ".join(self.readme.split())
        assert " ".join(cmd.split()) in said, f"examples/{self.name}/README.md does not say {cmd!r}"

    def run(
        self,
        cmd: str,
        *,
        timeout: float = TIMEOUT,
        env: dict[str, str] | None = None,
        answer: str = "",
        cwd: str = ".",
        **fill: str,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command the README gives, to its end (``answer`` is typed on its stdin), in the
        example's folder or ``cwd`` under it. A README may write a placeholder
        (``lil approvals approve ID``): ``fill`` gives its value."""
        self.documented(cmd)
        return subprocess.run(
            ["bash", "-c", _filled(cmd, fill)],
            cwd=self.dir / cwd,
            env={**self.env, **(env or {})},
            input=answer,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def ok(
        self,
        cmd: str,
        *,
        timeout: float = TIMEOUT,
        env: dict[str, str] | None = None,
        answer: str = "",
        cwd: str = ".",
        **fill: str,
    ) -> str:
        """Run a command the README gives; it must succeed. Its stdout and stderr."""
        out = self.run(cmd, timeout=timeout, env=env, answer=answer, cwd=cwd, **fill)
        assert out.returncode == 0, f"{cmd!r} exited {out.returncode}: {out.stdout}{out.stderr}"
        return out.stdout + out.stderr

    def start(self, cmd: str, *, env: dict[str, str] | None = None, **fill: str) -> Proc:
        """Start a command the README gives, in a process group of its own."""
        self.documented(cmd)
        cmd = _filled(cmd, fill)
        self._n += 1
        out, err = self.tmp / f"cmd{self._n}.out", self.tmp / f"cmd{self._n}.err"
        with out.open("wb") as o, err.open("wb") as e:
            popen = subprocess.Popen(
                ["bash", "-c", cmd],
                cwd=self.dir,
                env={**self.env, **(env or {})},
                stdout=o,
                stderr=e,
                start_new_session=True,
            )
        proc = Proc(cmd, popen, out, err)
        self.procs.append(proc)
        return proc

    def lil_json(self, *args: str) -> Any:
        """``lil ARGS --json`` on the example's journal (a helper's look, not a README command)."""
        python = self.checkout / ".venv" / "bin" / "python"  # its lil: the checkout's
        return lil_json(
            *args, "--json", env=self.env, cwd=self.dir, timeout=TIMEOUT, python=python, script=True
        )

    def close(self) -> None:
        from tests.conftest import _kill_owner

        for proc in self.procs:
            if proc.popen.poll() is None:
                proc.kill()
        for journal in self.journals:
            _kill_owner(journal)


def _filled(cmd: str, fill: dict[str, str]) -> str:
    for placeholder, value in fill.items():
        assert re.search(rf"\b{placeholder}\b", cmd), f"no {placeholder} in {cmd!r}"
        cmd = re.sub(rf"\b{placeholder}\b", value, cmd)
    return cmd


def killed(returncode: int) -> bool:
    """A process that died of SIGKILL, seen directly or through the shell that ran it."""
    return returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
