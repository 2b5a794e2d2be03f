"""The cookbook as a whole: the index lists every example and the front page links the index;
each example's README has its sections (what it shows, the two commands, what to try) and only
links that resolve; every example is run by a test of its own; and no example reaches into
letitloop's private modules or into tests/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.examples.cookbook import EXAMPLES, ROOT, run_it

FOLDERS = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and not p.name.startswith("."))
HERE = Path(__file__).resolve().parent


def test_the_front_page_links_the_cookbook_and_the_index_lists_every_example() -> None:
    assert "](examples/README.md)" in (ROOT / "README.md").read_text()
    index = (EXAMPLES / "README.md").read_text()
    listed = set(re.findall(r"\]\(([\w-]+)/README\.md\)", index))
    assert listed == set(FOLDERS)
    assert len(FOLDERS) >= 12  # the nine of issue 29 (the fourth three frameworks), and memory
    assert "agent_memory" in listed  # issue 33


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_readme_shows_runs_and_says_what_to_try(folder: str) -> None:
    readme = (EXAMPLES / folder / "README.md").read_text()
    assert readme.startswith("# ") and "## Run it" in readme and "## What to try" in readme
    commands = run_it(readme)
    assert len(commands) == 2, commands  # the two commands that run it
    assert re.search(r"kill|crash|SIGKILL|restart", readme.split("## What to try", 1)[1], re.I)
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith(("http://", "https://")):
            assert (EXAMPLES / folder / target).resolve().exists(), f"{folder}: {target}"


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_example_is_run_by_a_test(folder: str) -> None:
    tests = "".join(p.read_text() for p in HERE.glob("test_*.py") if p.name != "test_index.py")
    assert f'"{folder}"' in tests, f"no test in tests/examples runs examples/{folder}"


@pytest.mark.parametrize("folder", FOLDERS)
def test_examples_keep_to_the_public_api(folder: str) -> None:
    private = re.compile(r"(?:from|import)\s+(letitloop(?:\.\w+)*\._\w+|tests\b)")
    for path in (EXAMPLES / folder).rglob("*"):
        if path.suffix in (".py", ".ipynb") and path.is_file():
            found = private.findall(path.read_text())
            assert not found, f"{path.relative_to(ROOT)} imports {found}"
