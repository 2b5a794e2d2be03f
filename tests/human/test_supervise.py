"""``@supervise`` with real child processes and real SIGKILLs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import HERE, Lab

CALLER = (
    "import os, supervised\n"
    "from human_workflows import log\n"
    "log('before')\n"
    "print('RESULT', supervised.crunch(5), os.getpid(), flush=True)\n"
    "log('after')\n"
)


def run(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=lab.env, cwd=HERE, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("how", ["-c", "-m"])
def test_value_computed_in_the_child_after_one_sigkill(lab: Lab, how: str, tmp_path) -> None:
    if how == "-c":
        done = run(lab, "-c", CALLER)
    else:
        (tmp_path / "caller_main.py").write_text(CALLER)
        lab.env["PYTHONPATH"] += f":{tmp_path}"
        done = run(lab, "-m", "caller_main")
    assert done.returncode == 0, done.stderr
    assert "killed by SIGKILL" in done.stderr and "restarting" in done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT"))
    result, caller_pid = eval(line.split(" ", 1)[1].rsplit(" ", 1)[0]), int(line.rsplit(" ", 1)[1])
    assert result["total"] == 0 + 1 + 2 + 3 + 4
    names = lab.names()
    assert names.count("before") == 1 and names.count("after") == 1  # caller code ran once
    assert [n for n in names if n.startswith("s")] == ["s0", "s1", "s2", "s3", "s4"]  # each once
    pids = {name: pid for name, pid, _ in lab.steps()}
    assert pids["before"] == pids["after"] == caller_pid
    assert pids["s0"] != pids["s4"] == result["child"] != caller_pid  # restarted child finished


def test_gives_up_after_max_restarts_with_a_clear_error(lab: Lab) -> None:
    done = run(lab, "-c", "import supervised; supervised.always_dies()")
    assert done.returncode == 1
    assert "SupervisorError" in done.stderr and "kept crashing" in done.stderr
    assert "giving up" in done.stderr
    assert lab.names() == ["attempt", "attempt"]  # the first run and max_restarts=1 restart


def test_an_exception_is_raised_in_the_caller_not_restarted(lab: Lab) -> None:
    done = run(
        lab,
        "-c",
        "import supervised\ntry:\n    supervised.fails('bad input')\n"
        "except ValueError as e:\n    print('CAUGHT', e)",
    )
    assert done.returncode == 0, done.stderr
    assert "CAUGHT bad input" in done.stdout
    assert lab.names() == ["fails"]


def test_a_function_defined_in_python_c_fails_clearly(lab: Lab) -> None:
    code = (
        "from letitloop import supervise\n"
        "@supervise\ndef f():\n    return 1\n"
        "try:\n    f()\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    done = run(lab, "-c", code)
    assert "SupervisorError" in done.stdout and "cannot import it" in done.stdout
    assert "fix:" in done.stdout
