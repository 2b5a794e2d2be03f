"""Make work/: a scratch git repository with a bug, a test, and a task for a coding agent.

    python new_project.py

work/src/calc.py's add() is not written yet and work/tests/test_calc.py says what it must do;
work/tasks/calc.toml asks an agent to fix it, names the checks that decide whether it did (the
tests, signed into a receipt; every changed .py file parses), protects add()'s signature, and
names the agent: stand_in_agent.py beside this file, a deterministic stand-in for a coding CLI
(Claude Code, Codex, ...), so the example runs offline and the same every time. The journal is
this folder's (.letitloop/); rm -rf work to start over.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
FILES = {
    "src/calc.py": '"""A calculator."""\n\n\ndef add(a: int, b: int) -> int:\n'
    "    raise NotImplementedError\n\n\ndef sub(a: int, b: int) -> int:\n    return a - b\n",
    "tests/test_calc.py": "import sys\n\nsys.path.insert(0, 'src')\n\nimport calc\n\n\n"
    "def test_add() -> None:\n"
    "    assert calc.add(2, 3) == 5, f'add(2, 3) returned {calc.add(2, 3)}'\n\n\n"
    "def test_sub() -> None:\n    assert calc.sub(5, 3) == 2\n",
    "tasks/calc.toml": """\
goal = "Implement add(a, b) in src/calc.py so that tests/test_calc.py passes"
paths = ["src/**"]                      # what the agent may change
protect = ["src/calc.py::add"]          # its signature must not change
agents = [
  { name = "stand-in", command = ["python", "../stand_in_agent.py", "{prompt}"] },
]

[limits]
attempts = 4

[[checks]]
name = "tests"
kind = "command"
# --disable-plugin-autoload: none of the pytest plugins installed around it are needed here
run = [
  "python", "-m", "pytest", "-q", "--disable-plugin-autoload", "-p", "no:cacheprovider", "tests",
]
receipt = "build/receipt.json"          # the final run of the tests, signed

[[checks]]
kind = "python"                         # every changed .py file parses
""",
    ".gitignore": "build/\n.letitloop/\n__pycache__/\n",
}


def main() -> int:
    if WORK.exists():
        print(f"{WORK.relative_to(HERE)}/ exists already; rm -rf work to start over")
        return 1
    for rel, text in FILES.items():
        path = WORK / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git = ["git", "-c", "user.name=cookbook", "-c", "user.email=cookbook@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "calc: add() to write"]):
        subprocess.run([*git, *args], cwd=WORK, check=True)
    print("work/ is a git repository with a task: lil run --task calc --root work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
